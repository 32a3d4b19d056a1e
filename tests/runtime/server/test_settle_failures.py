"""A failure while one session's share of a batched pass is settled (its rule, logits
processing or commit raising: llama.cpp's path re-decode, a bug), or while an SH follow-up
is decided from its kept pass, fails that call alone: the
batch's other rounds stand, and the session is put back as it was before the pass (tokens,
counts, random stream; its cache dropped), so the same call sent again gets the round it
would have had."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import semantic_rules
from tests.runtime.semantic_helpers import draft_coordinate_head, next_token, rows
from tests.runtime.server.semantic_engine import GOOD, GREEDY, PROMPT
from tests.runtime.server.test_engine_cache_state import VOCAB, SuccessorTarget
from tests.runtime.server.test_semantic_rule import _verify as _semantic_verify
from tests.runtime.wrapped_target import WrappedTarget

SAMPLED = SamplingParams(max_new_tokens=20, temperature=1.0, seed=5)
UNIFORM = np.full((4, VOCAB), 1 / VOCAB, np.float32)


class CropFails(SuccessorTarget):
    """Its crop of a cache that starts with ``token`` raises while ``armed``."""

    def __init__(self, token: int) -> None:
        super().__init__()
        self.token, self.armed = token, False

    def crop(self, kv: tuple[int, ...], num_tokens: int) -> tuple[int, ...]:
        if kv[0] == self.token and self.armed:
            raise RuntimeError("re-decode failed")
        return super().crop(kv, num_tokens)


def _engine(backend: SuccessorTarget) -> tuple[VerificationEngine, VerifyOutcome]:
    """a (greedy) and b (sampled) opened; b's first round verified (b holds a cache)."""
    engine = VerificationEngine(backend)
    engine.open_session(SessionSpec("a", "c", (3,), SamplingParams(max_new_tokens=20)))
    engine.open_session(SessionSpec("b", "c", (7,), SAMPLED))
    first = engine.verify_batch([VerifyCall("b", 1, (8, 9, 10, 11), UNIFORM)])[0]
    assert isinstance(first, VerifyOutcome) and engine.counters().num_cached_tokens > 0
    return engine, first


def test_the_others_rounds_stand_and_the_session_is_as_before_its_pass() -> None:
    backend = CropFails(7)
    engine, _ = _engine(backend)
    tokens = engine.session_tokens("b")
    b_call = VerifyCall("b", len(tokens), (12, 13, 14, 15), UNIFORM)
    backend.armed = True
    a, b = engine.verify_batch([VerifyCall("a", 1, (4, 5, 9)), b_call])
    assert isinstance(a, VerifyOutcome) and a.committed_token_ids == (4, 5, 6)
    assert isinstance(b, RequestError) and (b.code, b.message) == (
        ErrorCode.INTERNAL,
        "verification failed after the target's pass: RuntimeError('re-decode failed')",
    )
    assert engine.session_tokens("b") == tokens
    assert engine.counters().num_cached_tokens == 3  # a's cache kept, b's dropped
    backend.armed = False
    again = engine.verify_batch([b_call])[0]  # the same call: re-prefilled, the same draws
    reference, _ = _engine(SuccessorTarget())
    alone = reference.verify_batch([b_call])[0]
    assert isinstance(again, VerifyOutcome) and isinstance(alone, VerifyOutcome)
    assert (again.committed_token_ids, again.result) == (alone.committed_token_ids, alone.result)
    assert engine.session_tokens("b") == reference.session_tokens("b")
    assert backend.items[-1].kv_len == 0 and engine.counters().num_reprefills == 1
    follow = VerifyCall("a", 4, (7,))  # a goes on from its committed round, on its cache
    assert isinstance(engine.verify_batch([follow])[0], VerifyOutcome)
    assert backend.items[-1].kv_len == 3


class SecondCropFails(WrappedTarget):
    """The real target; while ``armed``, its second crop raises (the first is the exact
    session's commit, settled before the SH follow-ups)."""

    def __init__(self, inner: TransformersTarget) -> None:
        super().__init__(inner)
        self.armed, self.crops = False, 0
        self.crop = self._crop

    def forward(self, items: Any) -> Any:
        return self._inner.forward(items)

    def _crop(self, kv: Any, num_tokens: int) -> Any:
        self.crops += 1
        if self.armed and self.crops == 2:
            raise RuntimeError("crop failed")
        return self._inner.crop(kv, num_tokens)


def _sh_engine(backend: Any) -> VerificationEngine:
    engine = VerificationEngine(backend, rules=semantic_rules(draft_coordinate_head()))
    engine.open_session(SessionSpec("sh", "c", PROMPT, GREEDY, verification_rule="semantic",
                                    semantic=GOOD))  # fmt: skip
    engine.open_session(SessionSpec("x", "c", PROMPT, GREEDY))
    return engine


def test_a_follow_up_that_fails_to_commit_fails_alone_and_the_block_is_sent_again(
    target: TransformersTarget, target_model: Any
) -> None:
    """An SH follow-up is decided from its kept pass after the batch's passes are settled;
    its commit raising threw the batch's other committed rounds out too. It is ``ABORTED``
    (its waiting pass is gone: the drafter replays the round); it was ``INTERNAL``, on which
    the drafter gives up (a server review)."""
    block = tuple((next_token(target_model, PROMPT) + 1 + j) % 64 for j in range(4))
    backend = SecondCropFails(target)
    engine = _sh_engine(backend)
    first = _semantic_verify(engine, VerifyCall("sh", len(PROMPT), block))
    assert first.hidden_request is not None
    wanted = rows(-1.0, +1.0, -1.0, -1.0)[list(first.hidden_request)]
    followup = VerifyCall("sh", len(PROMPT), block, payloads={DRAFT_HIDDEN: wanted})
    engine.validate(followup, 16)
    backend.armed = True
    x, sh = engine.verify_batch([VerifyCall("x", len(PROMPT), block[:1]), followup])
    assert isinstance(x, VerifyOutcome) and len(x.committed_token_ids) >= 1
    assert isinstance(sh, RequestError) and (sh.code, sh.message) == (
        ErrorCode.ABORTED,
        "session 'sh': verification failed after the target's pass: RuntimeError('crop "
        "failed'), deciding the follow-up of its block at prefix_len 5; nothing was "
        "committed: send the block again",
    )
    assert engine.session_tokens("sh") == PROMPT and engine.session_pending("sh") is None
    backend.armed = False
    reference = _sh_engine(target)
    _semantic_verify(reference, VerifyCall("sh", len(PROMPT), block))
    want = _semantic_verify(reference, followup)
    again = _semantic_verify(engine, VerifyCall("sh", len(PROMPT), block))  # sent again
    assert again.hidden_request == first.hidden_request
    assert _semantic_verify(engine, followup).committed_token_ids == want.committed_token_ids


def test_a_pass_that_cannot_be_built_fails_that_call_alone(monkeypatch: Any) -> None:
    """Building b's item raises (a bug): a's round stands, b's call fails INTERNAL and b is
    no longer in flight (it was left so: never expired, out of the LRU), so the same
    call sent again gets its round."""
    from edgespec.runtime.server import engine as engine_module
    from edgespec.runtime.server.prefill_parts import next_part as built

    engine, _ = _engine(SuccessorTarget())
    tokens = engine.session_tokens("b")
    b_call = VerifyCall("b", len(tokens), (12, 13, 14, 15), UNIFORM)

    def broken(s: Any, *args: Any) -> Any:
        if s.spec.session_id == "b":
            raise ValueError("no item")
        return built(s, *args)

    monkeypatch.setattr(engine_module, "next_part", broken)
    a, b = engine.verify_batch([VerifyCall("a", 1, (4, 5, 9)), b_call])
    assert isinstance(a, VerifyOutcome) and a.committed_token_ids == (4, 5, 6)
    assert isinstance(b, RequestError) and (b.code, b.message) == (
        ErrorCode.INTERNAL,
        "verification failed building the target's pass: ValueError('no item')",
    )
    assert not engine._sessions["b"].in_flight  # an idle session: it expires, is evicted
    monkeypatch.setattr(engine_module, "next_part", built)
    again = engine.verify_batch([b_call])[0]
    assert isinstance(again, VerifyOutcome) and engine.session_tokens("b")[: len(tokens)] == tokens
