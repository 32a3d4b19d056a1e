"""A sampled chain's verdict computes the target's probabilities of a row only when the
verifier reads it (the rows up to the first rejection, or every row and the bonus when all
are accepted), and gives, bit for bit and draw for draw, the verdict of all K + 1 rows
computed up front (``logits_to_probs`` of the block, then ``stochastic_verify``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.core.speculative import stochastic_verify
from edgespec.core.types import SamplingParams
from edgespec.runtime import sampling as sampling_module
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.sampling import TargetProbs, draft_sample, logits_to_probs
from edgespec.runtime.server import verification
from edgespec.runtime.server.verification import ExactRule
from edgespec.runtime.wire.codec import call_from_proto, call_to_proto


def _compact(call: VerifyCall, vocab: int) -> VerifyCall:
    """``call`` as the server reads it off the wire: its q a :class:`CompactProbs`."""
    back = call_from_proto(call_to_proto(call), vocab, 64)
    assert isinstance(back.draft_probs, CompactProbs)
    return back


def _cases() -> Iterator[tuple[int, SamplingParams, VerifyCall, npt.NDArray[np.float32]]]:
    """Blocks a sampling drafter draws, target rows near them (so rejections fall at every
    position and some blocks are accepted whole), dense q and compact q, top_p 1 and not."""
    rng = np.random.default_rng(11)
    for seed in range(240):
        vocab, k = int(rng.integers(2, 60)), int(rng.integers(0, 7))
        sampling = SamplingParams(
            temperature=float(rng.choice([0.3, 1.0, 2.5])),
            top_p=float(rng.choice([1.0, 0.9, 0.5])),
            max_new_tokens=64,
        )
        logits = (rng.standard_normal((k + 1, vocab)) * 3).astype(np.float32)
        drafted = [
            draft_sample(
                logits_to_probs(row + rng.normal(0, 0.4, vocab).astype(np.float32), 1.0), rng, vocab
            )
            for row in logits[:k]
        ]
        tokens = tuple(token for token, _ in drafted)
        rows = np.stack([q for _, q in drafted]) if drafted else np.zeros((0, vocab), np.float32)
        dense = VerifyCall("s", 3, tokens, rows if k else None)
        for call in (dense, _compact(dense, vocab)) if k else (dense,):
            yield seed, sampling, call, logits


def test_the_verdict_is_all_rows_up_fronts_draw_for_draw() -> None:
    seen: set[int | None] = set()
    for seed, sampling, call, logits in _cases():
        got_rng, want_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        got = ExactRule().verdict(call, sampling, HostRows(logits), got_rng).result
        q = call.draft_probs
        dense = q.dense() if isinstance(q, CompactProbs) else q
        probs = logits_to_probs(logits, sampling.temperature, sampling.top_p)
        want = stochastic_verify(
            call.draft_token_ids,
            np.zeros((0, logits.shape[1])) if dense is None else dense,
            probs,
            want_rng,
        )
        assert got == want
        assert got_rng.random() == want_rng.random()  # as many draws, in the same order
        seen.add(got.first_rejection)
    assert seen >= {None, 0, 1, 2, 3}


@pytest.mark.parametrize("vocab", [1, 7, 1000, 262_144])
@pytest.mark.parametrize("top_p", [1.0, 0.9, 0.2])
def test_each_row_as_read_is_the_blocks_row_bit_for_bit(vocab: int, top_p: float) -> None:
    rng = np.random.default_rng(vocab)
    logits = (rng.standard_normal((5, vocab)) * rng.uniform(0.1, 5.0, (5, 1))).astype(np.float32)
    block = logits_to_probs(logits, 0.7, top_p)
    rows = TargetProbs(logits, 0.7, top_p)
    for i in (3, 0, 0, 4, 1):  # out of order, and again
        token = int(rng.integers(vocab))
        assert rows.prob(i, token) == float(block[i, token])
        assert rows.row(i).tobytes() == block[i].tobytes()


def _spy_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the logit rows turned into probabilities, wherever the verdict does it."""
    computed: list[int] = []
    real: Callable[..., Any] = logits_to_probs

    def spy(logits: npt.NDArray[np.float32], *args: Any) -> Any:
        computed.append(int(np.prod(np.shape(logits)[:-1])))
        return real(logits, *args)

    monkeypatch.setattr(sampling_module, "logits_to_probs", spy)
    monkeypatch.setattr(verification, "logits_to_probs", spy, raising=False)
    return computed


def _block(k: int, reject_at: int | None, vocab: int) -> tuple[VerifyCall, npt.NDArray[np.float32]]:
    """K draft tokens, each with all of q's mass: the target is certain of the token before
    ``reject_at`` (accepted whatever the draw) and gives it no mass there (rejected)."""
    tokens = tuple(range(1, k + 1))
    q = np.zeros((k, vocab), np.float32)
    q[np.arange(k), tokens] = 1.0
    logits = np.zeros((k + 1, vocab), np.float32)
    for i, token in enumerate(tokens):
        logits[i, token] = -60.0 if i == reject_at else 60.0
    return _compact(VerifyCall("s", 3, tokens, q), vocab), logits


@pytest.mark.parametrize(("reject_at", "num_rows"), [(0, 1), (3, 4), (7, 8), (None, 9)])
def test_only_the_rows_read_are_computed(
    monkeypatch: pytest.MonkeyPatch, reject_at: int | None, num_rows: int
) -> None:
    computed = _spy_rows(monkeypatch)
    call, logits = _block(8, reject_at, 50)
    sampling = SamplingParams(temperature=1.0, top_p=0.9, max_new_tokens=64)
    result = ExactRule().verdict(call, sampling, HostRows(logits), np.random.default_rng(0)).result
    assert (result.first_rejection, sum(computed)) == (reject_at, num_rows)


def test_a_block_rejected_at_once_costs_about_one_row_at_262144_tokens() -> None:
    """K = 32 rejected at its first token takes well under 4 × the time of K = 0 (one row):
    computing all 33 rows up front took about 33 ×."""
    vocab, sampling = 262_144, SamplingParams(temperature=1.0, top_p=0.9, max_new_tokens=64)
    call, logits = _block(32, 0, vocab)
    logits += np.random.default_rng(0).standard_normal(logits.shape).astype(np.float32)
    empty = VerifyCall("s", 3, ())

    def best_s(block: VerifyCall, rows: npt.NDArray[np.float32]) -> float:
        times = []
        for seed in range(3):
            start = time.perf_counter()
            ExactRule().verdict(block, sampling, HostRows(rows), np.random.default_rng(seed))
            times.append(time.perf_counter() - start)
        return min(times)

    one_row_s, block_s = best_s(empty, logits[:1]), best_s(call, logits)
    assert block_s < 4 * one_row_s, (block_s, one_row_s)
