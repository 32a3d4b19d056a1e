"""Opt-in return of the target's last-layer hidden states (feature drafts, EAGLE-style):
backend rows, engine slicing, drafter loop in process and over loopback gRPC (the codec:
test_target_hidden_codec.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import torch

from edgespec.core.types import FloatArray, SamplingParams
from edgespec.runtime.backends.base import (
    DraftProposal,
    FeatureDraftBackend,
    ForwardItem,
)
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.backends.padding import pass_groups
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome, VerifyReply
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import (
    LocalVerifier,
    speculative_generate,
    target_greedy_decode,
)
from tests.runtime.conftest import ServerFactory
from tests.runtime.server.test_engine import _verify

PROMPT = (3, 17, 42, 5, 9, 60, 1, 22)
MAX_NEW = 24
GREEDY = SamplingParams(max_new_tokens=MAX_NEW)


def _reference_hidden(model: Any, sequence: Sequence[int]) -> npt.NDArray[np.float32]:
    """The base model's last hidden state over the whole sequence, computed alone."""
    with torch.inference_mode():
        out = model.model(input_ids=torch.tensor([list(sequence)]))
    hidden: npt.NDArray[np.float32] = out.last_hidden_state[0].float().numpy()
    return hidden


def _by_position(observed: Sequence[tuple[int, FloatArray]]) -> dict[int, Any]:
    """Rows keyed by position; consecutive observations must continue where the last ended."""
    rows: dict[int, Any] = {}
    end = 0
    for start, block in observed:
        assert start == end, f"rows start at {start}, expected {end} (contiguous)"
        rows.update((start + i, row) for i, row in enumerate(block))
        end = start + len(block)
    return rows


def _check_rows(model: Any, sequence: Sequence[int], rows: dict[int, Any]) -> None:
    assert sorted(rows) == list(range(len(sequence) - 1))  # the newest token has no row yet
    reference = _reference_hidden(model, sequence)
    for pos, row in rows.items():
        np.testing.assert_allclose(row, reference[pos], rtol=1e-4, atol=1e-5, err_msg=f"{pos}")


# --- backend


@pytest.mark.parametrize(("blocked", "split"), [(True, True), (False, True), (True, False)])
def test_backend_hidden_rows_equal_the_base_model_alone(
    target_model: Any, blocked: bool, split: bool
) -> None:
    target = TransformersTarget(  # the vocabulary blocks are the lossy mode's only
        target_model, blocked_head_logits=blocked, split_padded_batches=split,
        numerics="lossy" if blocked else "exact",
    )  # fmt: skip
    base = tuple(t % 60 for t in range(7, 47))
    prefix = target.forward([ForwardItem(None, 0, base, 1)])[0].kv
    cold = tuple(t % 50 for t in range(5, 65))  # a 60-token cold start: its own pass
    specs = [  # (sequence, kv_len, num_logits, want_hidden)
        (base[:23], 20, 3, True),
        ((11, 12, 13, 14, 15, 16, 17), 0, 2, True),
        (base[:6], 5, 1, True),
        (base[:24], 20, 4, False),
        (cold, 0, 1, True),
    ]

    def items(want: bool) -> list[ForwardItem]:
        return [
            ForwardItem(
                target.crop(prefix, kv_len) if kv_len else None,
                kv_len,
                seq[kv_len:],
                num_logits,
                want and wanted,
            )
            for seq, kv_len, num_logits, wanted in specs
        ]

    if split:
        shapes = [(len(seq) - kv_len, kv_len) for seq, kv_len, _, _ in specs]
        assert len(pass_groups(shapes)) > 1  # the batch really is split
    with_hidden = target.forward(items(True))
    without = target.forward(items(False))
    for (seq, kv_len, _, wanted), out, plain in zip(specs, with_hidden, without, strict=True):
        np.testing.assert_array_equal(out.logits, plain.logits)
        assert plain.hidden is None
        if not wanted:
            assert out.hidden is None
            continue
        assert out.hidden is not None and out.hidden.dtype == np.float32
        assert out.hidden.shape == (len(seq) - kv_len, target_model.config.hidden_size)
        reference = _reference_hidden(target_model, seq)[kv_len:]
        np.testing.assert_allclose(out.hidden, reference, rtol=1e-4, atol=1e-5)


def test_head_path_applies_the_final_logit_softcap() -> None:
    from edgespec.runtime.testing import tiny_gemma3

    model = tiny_gemma3(final_logit_softcapping=3.0)
    with torch.no_grad():
        model.lm_head.weight.mul_(100.0)  # logits well beyond the cap
    target = TransformersTarget(model)
    item = ForwardItem(None, 0, tuple(range(10)), 3)
    plain = target.forward([item])[0]
    hidden = target.forward([ForwardItem(None, 0, tuple(range(10)), 3, want_hidden=True)])[0]
    assert np.abs(plain.logits).max() > 2.0  # the cap matters here
    np.testing.assert_array_equal(hidden.logits, plain.logits)
    assert hidden.hidden is not None and hidden.hidden.shape == (10, 32)


# --- engine


def test_engine_returns_rows_of_every_committed_forwarded_position(
    target: TransformersTarget, target_model: Any
) -> None:
    reference = target_greedy_decode(target, PROMPT, 40)
    engine = VerificationEngine(target)
    sampling = SamplingParams(max_new_tokens=40)
    engine.open_session(SessionSpec("h", "c", PROMPT, sampling, return_hidden=True))
    engine.open_session(SessionSpec("plain", "c", PROMPT, sampling))
    observed = []
    rejected = 0
    for r in range(6):
        done = len(engine.session_tokens("h")) - len(PROMPT)
        draft = list(reference[done : done + 4])
        if r % 3 != 2:  # reject from a different position each time; every third all accepted
            draft[r % 4] = (draft[r % 4] + 1) % 64
        call = VerifyCall("h", len(PROMPT) + done, tuple(draft))
        other = VerifyCall("plain", len(engine.session_tokens("plain")), (1, 2))
        out, plain = engine.verify_batch([call, other])  # batched beside a plain session
        assert isinstance(out, VerifyOutcome) and isinstance(plain, VerifyOutcome)
        assert plain.target_hidden is None
        assert out.target_hidden is not None
        rejected += out.result.num_accepted < len(draft)
        observed.append((out.target_hidden_start, out.target_hidden))
    assert rejected >= 3
    tokens = engine.session_tokens("h")
    assert tokens[len(PROMPT) :] == reference[: len(tokens) - len(PROMPT)]
    _check_rows(target_model, tokens, _by_position(observed))


def test_a_reprefill_returns_only_the_rows_the_client_lacks(
    target: TransformersTarget, target_model: Any
) -> None:
    """The re-prefill forwards the whole context again; its reply carries the rows from the
    newest committed token on, as a cached round's would (the client holds the others)."""
    engine = VerificationEngine(target, kv_budget_tokens=len(PROMPT) + 4)
    engine.open_session(SessionSpec("a", "c", PROMPT, GREEDY, return_hidden=True))
    engine.open_session(SessionSpec("b", "c", PROMPT[::-1], GREEDY))
    first = _verify(engine, "a", (1, 2))
    _verify(engine, "b", (1, 2))  # evicts "a"
    assert engine.counters().num_evictions >= 1
    prefix_len = len(engine.session_tokens("a"))
    again = _verify(engine, "a", (3,))
    assert again.num_forwarded == prefix_len + 1  # re-prefilled: the whole context
    assert first.target_hidden_start == 0 and again.target_hidden_start == prefix_len - 1
    assert first.target_hidden is not None and again.target_hidden is not None
    observed = [(0, first.target_hidden), (prefix_len - 1, again.target_hidden)]
    _check_rows(target_model, engine.session_tokens("a"), _by_position(observed))


# --- drafter loop


class RecordingFeatureDraft:
    """A FeatureDraftBackend wrapping a plain drafter; records every observation."""

    def __init__(self, inner: TransformersDraft, wants: bool = True) -> None:
        self._inner = inner
        self.wants_target_hidden = wants
        self.observed: list[tuple[int, npt.NDArray[np.float32]]] = []

    def observe_target_hidden(self, start_pos: int, rows: npt.NDArray[np.float32]) -> None:
        assert self.wants_target_hidden
        assert rows.dtype == np.float32 and rows.ndim == 2
        self.observed.append((start_pos, rows.copy()))

    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        if self.observed:  # the rows of all but the newest committed token came first
            start, rows = self.observed[-1]
            assert start + len(rows) == len(context) - 1
        return self._inner.propose(context, gamma, temperature, rng, shaping)

    def reset(self) -> None:
        self._inner.reset()
        self.observed.clear()


def test_drafter_loop_in_process_observes_every_committed_position(
    target: TransformersTarget, target_model: Any, draft_model: Any
) -> None:
    drafter = RecordingFeatureDraft(TransformersDraft(draft_model))
    assert isinstance(drafter, FeatureDraftBackend)
    result = speculative_generate(target, drafter, PROMPT, 4, GREEDY)
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, MAX_NEW)
    assert 0 < result.request.num_accepted < result.request.num_drafted  # some rejected
    assert len(drafter.observed) == result.request.num_rounds
    rows = _by_position(drafter.observed)
    _check_rows(target_model, (*PROMPT, *result.output_token_ids), rows)


def test_drafter_not_wanting_hidden_gets_none(target: TransformersTarget, draft_model: Any) -> None:
    drafter = RecordingFeatureDraft(TransformersDraft(draft_model), wants=False)
    result = speculative_generate(target, drafter, PROMPT, 4, GREEDY)
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, MAX_NEW)
    assert drafter.observed == []


class _ExpiringVerifier(LocalVerifier):
    """Loses the session before the second verification (as an idle expiry would)."""

    def __init__(self, engine: VerificationEngine) -> None:
        super().__init__(engine)
        self.specs: list[SessionSpec] = []
        self._calls = 0

    def open(self, spec: SessionSpec) -> None:
        self.specs.append(spec)
        super().open(spec)

    def verify(self, call: VerifyCall) -> VerifyReply:
        self._calls += 1
        if self._calls == 2:
            self.engine.close_session(call.session_id)
        return super().verify(call)


def test_reopened_session_still_returns_hidden(
    target: TransformersTarget, target_model: Any, draft_model: Any
) -> None:
    verifier = _ExpiringVerifier(VerificationEngine(target))
    drafter = RecordingFeatureDraft(TransformersDraft(draft_model))
    result = generate(verifier, drafter, PROMPT, GREEDY, DraftOptions(session_id="x"))
    assert result.num_reconnects == 1
    assert [s.return_hidden for s in verifier.specs] == [True, True]
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, MAX_NEW)
    rest = drafter.observed[1:]
    assert rest[0][0] == 0  # the re-prefill starts the rows at 0 again
    _check_rows(target_model, (*PROMPT, *result.output_token_ids), _by_position(rest))


def test_drafter_loop_over_grpc_matches_in_process_rows(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    server = make_server()
    local = RecordingFeatureDraft(TransformersDraft(draft_model))
    expected = speculative_generate(target, local, PROMPT, 4, GREEDY)
    remote = RecordingFeatureDraft(TransformersDraft(draft_model))
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    try:
        result = generate(verifier, remote, PROMPT, GREEDY, DraftOptions(session_id="g"))
    finally:
        verifier.close_channel()
    assert result.output_token_ids == expected.output_token_ids
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, MAX_NEW)
    local_rows, remote_rows = _by_position(local.observed), _by_position(remote.observed)
    assert sorted(remote_rows) == list(range(len(PROMPT) + MAX_NEW - 1))
    for pos, row in local_rows.items():
        np.testing.assert_allclose(remote_rows[pos], row, rtol=2e-3, atol=2e-3)


def test_chunked_prefill_keeps_logits_kv_and_hidden_rows(target_model: Any) -> None:
    whole = TransformersTarget(target_model)
    chunked = TransformersTarget(target_model, prefill_chunk_tokens=3)
    item = ForwardItem(None, 0, tuple(range(5, 16)), 3, want_hidden=True)  # 11 tokens
    a, b = whole.forward([item])[0], chunked.forward([item])[0]
    np.testing.assert_allclose(a.logits, b.logits, rtol=1e-4, atol=1e-4)
    assert a.hidden is not None and b.hidden is not None and b.hidden.shape == a.hidden.shape
    np.testing.assert_allclose(a.hidden, b.hidden, rtol=1e-4, atol=1e-4)
    assert whole.kv_bytes(a.kv) == chunked.kv_bytes(b.kv)  # the same 11 cached positions
    with pytest.raises(ValueError, match="prefill_chunk_tokens must be >= 1"):
        TransformersTarget(target_model, prefill_chunk_tokens=0)
