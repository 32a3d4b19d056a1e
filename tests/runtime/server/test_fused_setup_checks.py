"""The checks of a fused request (:func:`start_fused_run`, exact codes and messages) and
the server window's error codes (:class:`ServerWindow`), on fakes: no model, no gRPC."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.inputs import WindowHistory
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.window import StaticWindow
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, SessionSpec
from edgespec.runtime.server.clients import ClientBook
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.fused_setup import ServerWindow, start_fused_run
from edgespec.runtime.server.verification import ExactRule
from tests.runtime.round_fakes import Clock, Drafter, StatefulRecording

PROMPT = (1, 2, 3)


class _Broken:
    def __init__(self, answer: str) -> None:
        self.answer = answer

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        if self.answer == "raise":
            raise KeyError("oops")
        return WindowDecision(0)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("raise", "window policy _Broken raised KeyError('oops')"),
        ("zero", "window policy _Broken returned WindowDecision(gamma=0, fused=False); "),
    ],
)
def test_a_broken_server_window_is_internal(answer: str, message: str) -> None:
    with pytest.raises(RequestError) as info:
        ServerWindow(_Broken(answer), 64).decide(WindowHistory("p"), 0.0)
    assert info.value.code == ErrorCode.INTERNAL
    assert info.value.message.startswith(message)


def test_a_refused_pair_state_is_invalid_argument() -> None:
    window = ServerWindow(StatefulRecording(), 64)
    with pytest.raises(RequestError) as info:
        window.restore("p", (-1.0,))
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "history snapshot: window_state refused by window policy StatefulRecording: "
        "negative state (-1.0,)",
    )
    assert ServerWindow(StaticWindow(3), 64).state("p") == ()


class _Engine:
    def session_serial(self, session_id: str) -> int:
        return 1

    def session_spec(self, session_id: str) -> SessionSpec:
        return SessionSpec(session_id, "dev", PROMPT, SamplingParams())

    def session_tokens(self, session_id: str) -> tuple[int, ...]:
        return (*PROMPT, 4)

    def session_rule(self, session_id: str) -> ExactRule:
        return ExactRule()

    def session_pending(self, session_id: str) -> None:
        return None


class _FeatureDraft(Drafter):
    wants_target_hidden = True

    def observe_target_hidden(self, start_pos: int, rows: Any) -> None: ...


def _start(call: FusedCall, owner: str | None = "tok", factory: Any = None) -> Any:
    book = ClientBook(ServerConfig())
    book.opened(SessionSpec("s", "dev", PROMPT, SamplingParams()), "tok")
    drafter = factory or (lambda: Drafter(Clock()))
    return start_fused_run(call, owner, _Engine(), book, 4, drafter)  # type: ignore[arg-type]


BAD = ErrorCode.INVALID_ARGUMENT
WHOSE = "session 's' belongs to another client"
PREFIX = "prefix_len 3 does not match session 's', which has 4 committed tokens"


@pytest.mark.parametrize(
    ("prefix_len", "gamma", "owner", "code", "message"),
    [
        (4, 2, "other", ErrorCode.PERMISSION_DENIED, WHOSE),
        (3, 2, "tok", BAD, PREFIX),
        (4, 0, "tok", BAD, "fused gamma 0 outside 1..4"),
        (4, 5, "tok", BAD, "fused gamma 5 outside 1..4"),
    ],
)
def test_fused_requests_are_checked(
    prefix_len: int, gamma: int, owner: str, code: ErrorCode, message: str
) -> None:
    with pytest.raises(RequestError) as info:
        _start(FusedCall("s", prefix_len, gamma, HistorySnapshot()), owner)
    assert (info.value.code, info.value.message) == (code, message)


def test_a_fused_request_in_range_starts_and_a_feature_draft_is_refused() -> None:
    started = _start(FusedCall("s", 4, 4, HistorySnapshot()))
    assert (started.spec.session_id, started.tokens) == ("s", (*PROMPT, 4))
    with pytest.raises(RequestError) as info:
        _start(FusedCall("s", 4, 1, HistorySnapshot()), factory=lambda: _FeatureDraft(Clock()))
    assert (info.value.code, info.value.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "this server's draft drafts from target features, which fused rounds do not feed it",
    )
