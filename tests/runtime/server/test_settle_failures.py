"""A failure while one session's share of a batched pass is settled (its rule, logits
processing or commit raising: llama.cpp's path re-decode, a bug) fails that call alone: the
batch's other rounds stand, and the session is put back as it was before the pass (tokens,
counts, random stream; its cache dropped), so the same call sent again gets the round it
would have had."""

from __future__ import annotations

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from tests.runtime.server.test_engine_cache_state import VOCAB, SuccessorTarget

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
