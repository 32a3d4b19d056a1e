"""What the engine refuses when a session opens and when a verify call arrives: each
limit at its exact boundary, the message that names it, and which check speaks first."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.engine import VerificationEngine
from tests.runtime.server.test_engine_cache_state import SuccessorTarget

# SuccessorTarget: vocabulary 16, context 64 tokens


def _spec(prompt: tuple[int, ...], max_new: int = 4, temperature: float = 0.0) -> SessionSpec:
    sampling = SamplingParams(temperature=temperature, max_new_tokens=max_new, seed=0)
    return SessionSpec("s", "c", prompt, sampling)


def _refusal(fn: object, *args: object) -> tuple[ErrorCode, str]:
    assert callable(fn)
    with pytest.raises(RequestError) as info:
        fn(*args)
    return info.value.code, info.value.message


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_spec(()), "prompt is empty"),
        (
            _spec((1,) * 60, max_new=5),
            "prompt (60 tokens) + max_new_tokens (5) exceeds the target's context of 64",
        ),
        (_spec((1, 16)), "prompt token 1 (id 16) is outside the vocabulary [0, 16)"),
        (_spec((1, -1)), "prompt token 1 (id -1) is outside the vocabulary [0, 16)"),
    ],
)
def test_session_specs_refused(spec: SessionSpec, message: str) -> None:
    engine = VerificationEngine(SuccessorTarget())
    assert _refusal(engine.open_session, spec) == (ErrorCode.INVALID_ARGUMENT, message)
    assert engine.counters().num_sessions == 0


def test_a_session_may_fill_the_context_exactly() -> None:
    engine = VerificationEngine(SuccessorTarget())
    engine.open_session(_spec((1,) * 60, max_new=4))
    assert engine.session_tokens("s") == (1,) * 60


def test_verify_call_limits_at_their_boundaries() -> None:
    engine = VerificationEngine(SuccessorTarget())
    engine.open_session(_spec((1,) * 58, max_new=6))
    engine.validate(VerifyCall("s", 58, (2,) * 4), 4)  # the draft limit itself: fine
    assert _refusal(engine.validate, VerifyCall("s", 58, (2,) * 5), 4) == (
        ErrorCode.INVALID_ARGUMENT,
        "draft block has 5 tokens; the limit is 4",
    )
    engine.validate(VerifyCall("s", 58, (2,) * 6), 8)  # prefix + draft = the context
    assert _refusal(engine.validate, VerifyCall("s", 58, (2,) * 7), 8) == (
        ErrorCode.INVALID_ARGUMENT,
        "prefix (58) + draft (7) exceeds the target's context of 64",
    )


@pytest.mark.parametrize(
    ("call", "max_draft", "message"),
    [
        # too long AND a stale prefix AND outside the vocabulary: the size speaks first
        (VerifyCall("s", 9, (16,) * 3), 2, "draft block has 3 tokens; the limit is 2"),
        (
            VerifyCall("s", 9, (16,)),
            2,
            "prefix_len 9 does not match session 's', which has 2 committed tokens",
        ),
        (VerifyCall("s", 2, (3, 16)), 2, "draft token 1 (id 16) is outside the vocabulary [0, 16)"),
    ],
)
def test_the_first_failed_check_names_the_problem(
    call: VerifyCall, max_draft: int, message: str
) -> None:
    engine = VerificationEngine(SuccessorTarget())
    engine.open_session(_spec((1, 2)))
    assert _refusal(engine.validate, call, max_draft) == (ErrorCode.INVALID_ARGUMENT, message)


def test_a_sampled_session_needs_draft_probs_except_for_an_empty_block() -> None:
    engine = VerificationEngine(SuccessorTarget())
    engine.open_session(_spec((1, 2), temperature=1.0))
    engine.validate(VerifyCall("s", 2, ()), 4)  # a plain target step needs no q
    assert _refusal(engine.validate, VerifyCall("s", 2, (3,)), 4) == (
        ErrorCode.INVALID_ARGUMENT,
        "stochastic verification needs draft_probs",
    )
    engine.validate(VerifyCall("s", 2, (3,), np.full((1, 16), 1 / 16, np.float32)), 4)


def test_a_greedy_session_refuses_draft_probs() -> None:
    """They were accepted and ignored: a client sending them for nothing, up to the
    message limit each round."""
    engine = VerificationEngine(SuccessorTarget())
    engine.open_session(_spec((1, 2)))
    probs = np.full((1, 16), 1 / 16, np.float32)
    assert _refusal(engine.validate, VerifyCall("s", 2, (3,), probs), 4) == (
        ErrorCode.INVALID_ARGUMENT,
        "draft_probs are for sampled sessions; session 's' is greedy (temperature 0): send none",
    )
    engine.validate(VerifyCall("s", 2, (3,)), 4)
