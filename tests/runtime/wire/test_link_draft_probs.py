"""The emulated link's count of a sampled block's q (runtime/wire/link_bytes.py): ``dense``,
the papers' V fp16 a row (the default, as the simulator's), or ``compact``, each row's kept
entries as gRPC sends them, whether the q is held dense or compact; chosen by
``--link-draft-probs`` or ``link_draft_probs``."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.config import load_config
from edgespec.core.link_delay import DraftRows, compact_row_bytes, draft_probs_row_bytes
from edgespec.runtime.commands.link_arguments import link_overrides
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.sampling import draft_sample
from edgespec.runtime.wire.codec import call_from_proto, call_to_proto, pb
from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation, wrap_verifier
from edgespec.runtime.wire.link_bytes import verify_call_bytes
from tests.runtime.wire.test_emulated_link import StubVerifier

CHAIN = 64 + 4 * 3  # a 3-token block's header and ids


def test_a_compact_link_counts_each_rows_kept_entries() -> None:
    full = np.full((3, 10), 0.1, dtype=np.float32)
    two = np.zeros((3, 10), dtype=np.float32)
    two[:, [2, 7]] = 0.5
    for probs, per_row in ((full, 1 + 10 * 5), (two, 1 + 2 * 5)):
        call = VerifyCall("s", 7, (1, 2, 3), draft_probs=probs)
        assert verify_call_bytes(call, "compact") == CHAIN + 3 * per_row
        assert verify_call_bytes(call, "dense") == CHAIN + 3 * 2 * 10  # the papers' fp16 rows
        assert verify_call_bytes(call) == verify_call_bytes(call, "dense")
    greedy = VerifyCall("s", 7, (1, 2, 3))
    assert verify_call_bytes(greedy, "compact") == verify_call_bytes(greedy, "dense") == CHAIN
    slept: list[float] = []
    link = LinkEmulation(20.0, 0.0, 8.0, "compact")
    verifier = EmulatedLinkVerifier(StubVerifier(), link, np.random.default_rng(0), slept.append)
    verifier.verify(VerifyCall("s", 7, (1, 2, 3), draft_probs=two))
    assert verifier.transfers[0].uplink_bytes == CHAIN + 3 * (1 + 2 * 5)
    assert slept[0] == pytest.approx(0.01 + (CHAIN + 3 * 11) / 1e6, abs=1e-12)


def test_a_sampled_262k_block_held_compact_counts_as_gRPC_sends_it() -> None:
    vocab, rng = 262_144, np.random.default_rng(1)
    rows, tokens = [], []
    for scale in (1.0, 8.0, 8.0, 30.0):  # flat (the support's cap) to peaked (a few tokens)
        logits = rng.standard_normal(vocab) * scale
        probs = np.exp(logits - logits.max())
        token, q = draft_sample(probs / probs.sum(), rng, vocab)
        rows.append(q)
        tokens.append(token)
    dense_q = np.stack(rows)
    wire = call_to_proto(VerifyCall("s", 9, tuple(tokens), dense_q))
    held = call_from_proto(pb.VerifyRequest.FromString(wire.SerializeToString()), vocab, 32)
    counts = [int(n) for n in np.count_nonzero(dense_q, axis=1)]
    expected = 64 + 4 * 4 + sum(compact_row_bytes(n, vocab) for n in counts)
    assert verify_call_bytes(held, "compact") == verify_call_bytes(
        VerifyCall("s", 9, tuple(tokens), dense_q), "compact"
    ) == expected  # fmt: skip
    assert counts[0] == 1024 and min(counts) < 1024  # the cap, then fewer
    assert expected < 64 + 16 + 4 * draft_probs_row_bytes(
        vocab, DraftRows("compact")
    )  # the sim's bound


def test_the_flag_and_the_config_field_choose_it(tmp_path: Path) -> None:
    names = ("link_rtt_ms", "link_jitter_ms", "link_bandwidth_mbps", "link_seed")
    args = argparse.Namespace(**dict.fromkeys(names), link_draft_probs="compact")
    args.link_rtt_ms = 30.0
    assert link_overrides(args) == ["link_rtt_ms=30.0", "link_draft_probs=compact"]
    path = tmp_path / "drafter.yaml"
    path.write_text("link_rtt_ms: 30\nlink_draft_probs: compact\n")
    wrapped = wrap_verifier(StubVerifier(), load_config(DrafterConfig, path))
    assert isinstance(wrapped, EmulatedLinkVerifier)
    assert wrapped.link == LinkEmulation(rtt_ms=30.0, draft_probs="compact")
    assert load_config(DrafterConfig, None).link_draft_probs == "dense"


def test_an_unknown_count_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram", "--prompt-ids", "5,6"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--link-draft-probs", "sparse"])
    assert info.value.code == 2
    assert "--link-draft-probs: invalid choice: 'sparse'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="draft_probs must be dense or compact, got 'sparse'"):
        LinkEmulation(draft_probs="sparse")  # type: ignore[arg-type]
