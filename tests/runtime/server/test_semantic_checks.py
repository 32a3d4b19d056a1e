"""What a semantic (lossy, WISV) session and its calls may carry, in-process: the
threshold and channel a session may open with, the thresholds a server allows, the blocks
and payloads a semantic call may send, and the decision heads a server may serve."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SemanticSpec, SessionSpec, VerifyCall
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import SemanticVerification, semantic_rules
from edgespec.runtime.server.verification import rule_labels
from tests.runtime.semantic_helpers import draft_coordinate_head, rows
from tests.runtime.server.semantic_engine import GOOD, GREEDY, PROMPT
from tests.runtime.server.semantic_engine import open_semantic as _open
from tests.runtime.server.semantic_engine import semantic_engine as _engine

SEMANTIC_OWN_ARGMAX = (
    "semantic verification judges the target's own argmax: no logit_bias, penalties or min_tokens"
)


@pytest.mark.parametrize(
    ("semantic", "kw", "message"),
    [
        (None, {}, None),  # an exact session: fine
        (SemanticSpec(17, 20e6), {}, "semantic threshold 17 outside 0..16"),
        (SemanticSpec(-1, 20e6), {}, "semantic threshold -1 outside 0..16"),
        (
            SemanticSpec(12, 0.0),
            {},
            "semantic channel: uplink rate must be a finite number >= 1 bit/s, got 0.0",
        ),
        (  # opened, every mismatch then failed: log10 of an underflowed rate
            SemanticSpec(12, 5e-324),
            {},
            "semantic channel: uplink rate must be a finite number >= 1 bit/s, got 5e-324",
        ),
        (  # opened, the head's p was then NaN and every mismatch accepted
            SemanticSpec(12, 20e6, rtt_s=1e308),
            {},
            "semantic channel: RTT must be in [0, 1e+06] s, got 1e+308",
        ),
        (SemanticSpec(12, 1e6, per=1.0), {}, "semantic channel: PER must be in [0, 1), got 1.0"),
        (SemanticSpec(12, 20e6, draft_hidden_size=32), {}, None),  # the head's draft width
        (  # opened, every call then refused at its first mismatch (FH: every call)
            SemanticSpec(12, 20e6, draft_hidden_size=48),
            {},
            "session 's''s draft has hidden size 48; the server's decision head takes draft "
            "hidden states of width 32 (a head trained for another draft)",
        ),
        (
            GOOD,
            {"sampling": SamplingParams(temperature=0.8, max_new_tokens=4)},
            "semantic verification is greedy only; session 's' samples at temperature 0.8",
        ),
        (
            GOOD,
            {"sampling": SamplingParams(max_new_tokens=4, logit_bias=((3, 5.0),))},
            SEMANTIC_OWN_ARGMAX,
        ),
        (
            GOOD,
            {"sampling": SamplingParams(max_new_tokens=4, presence_penalty=0.5)},
            SEMANTIC_OWN_ARGMAX,
        ),
        (
            GOOD,
            {"sampling": SamplingParams(max_new_tokens=4, min_tokens=2)},
            SEMANTIC_OWN_ARGMAX,
        ),
        (
            GOOD,
            {"sampling": SamplingParams(max_new_tokens=4, logprobs=1)},
            "semantic verification returns no logprobs or prompt_logprobs",
        ),
        (
            GOOD,
            {"sampling": SamplingParams(max_new_tokens=4, prompt_logprobs=0)},
            "semantic verification returns no logprobs or prompt_logprobs",
        ),
    ],
)
def test_what_a_semantic_session_may_ask_for(
    target: TransformersTarget, semantic: SemanticSpec | None, kw: Any, message: str | None
) -> None:
    engine = _engine(target)
    if message is None:
        _open(engine, "s", semantic, **kw)
        return
    with pytest.raises(RequestError) as info:
        _open(engine, "s", semantic, **kw)
    assert (info.value.code, info.value.message) == (ErrorCode.INVALID_ARGUMENT, message)


def test_a_semantic_session_needs_its_options_and_an_allowed_threshold(
    target: TransformersTarget,
) -> None:
    head = draft_coordinate_head()
    engine = VerificationEngine(target, rules=semantic_rules(head, thresholds=(8, 12)))
    with pytest.raises(RequestError, match="needs the session's threshold and channel"):
        engine.open_session(SessionSpec("s", "c", PROMPT, GREEDY, verification_rule="semantic"))
    with pytest.raises(RequestError) as info:
        _open(engine, "s", SemanticSpec(5, 20e6))
    assert info.value.message == (
        "semantic threshold 5 is not allowed on this server; it allows [8, 12]"
    )
    _open(engine, "s", SemanticSpec(12, 20e6))
    labels = rule_labels("semantic", engine.session_rule("s"))
    assert labels == {"verification": "semantic", "lossy": True, "threshold": 12}


def test_block_checks_of_a_semantic_call(target: TransformersTarget) -> None:
    engine = _engine(target)
    _open(engine, "s")
    cases = [
        (
            VerifyCall("s", len(PROMPT), (1, 2), draft_parents=(-1, -1)),
            "semantic verification takes draft chains only, not token trees",
        ),
        (
            VerifyCall("s", len(PROMPT), (1, 2), payloads={DRAFT_HIDDEN: np.zeros((2, 16))}),
            "draft_hidden has shape [2, 16]; the server's decision head "
            "takes draft hidden states of width 32 (rows x 32)",
        ),
        (
            VerifyCall("s", len(PROMPT), (1, 2, 3), payloads={DRAFT_HIDDEN: rows(1, 1)}),
            "draft_hidden has 2 rows for 3 draft tokens: an FH call "
            "sends one row per draft token, an SH call none (the server asks for the rows "
            "it needs)",
        ),
        (
            VerifyCall("s", len(PROMPT), (1, 2), payloads={DRAFT_HIDDEN: rows(1, np.inf)}),
            "draft_hidden row 1 (draft position 1) has a non-finite value",
        ),
        (
            VerifyCall("s", len(PROMPT), (1,), payloads={"csi": np.zeros(4, np.float32)}),
            "verification rule 'semantic' takes no payload(s) ['csi']; it takes ['draft_hidden']",
        ),
    ]
    for call, message in cases:
        with pytest.raises(RequestError) as info:
            engine.validate(call, 16)
        assert (info.value.code, info.value.message) == (ErrorCode.INVALID_ARGUMENT, message)


def test_a_head_of_the_wrong_shape_is_refused_when_served() -> None:
    with pytest.raises(ValueError, match="target hidden states of width 32; the target's hidden"):
        SemanticVerification(draft_coordinate_head(), target_hidden_size=64)
    with pytest.raises(ValueError, match="non-empty set of integers in 0..16"):
        SemanticVerification(draft_coordinate_head(), frozenset({17}))
