"""A verification past its deadline says its server is busy, not down: the endpoint's
watch keeps the server reachable. A long prompt's first round, sent again while the server
prefilled it, made the only server unreachable: ``/ready`` said not ready, routing over
several servers left it out, and once that lasted past ``--retry-timeout-s`` (a progress
budget longer than it) other requests got their 503 at once. An open or a
probe past its deadline (they wait on no pass) and a verification the server refused to
connect still make it unreachable."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.errors import DEADLINE_EXCEEDED, ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.openai_api.server_watch import REACHABLE, UNREACHABLE, ServerWatch

LATE = RequestError(ErrorCode.UNAVAILABLE, DEADLINE_EXCEEDED)
REFUSED = RequestError(ErrorCode.UNAVAILABLE, "failed to connect to all addresses")


class Failing:
    """A server's client whose every call fails with ``error``."""

    def __init__(self, error: RequestError) -> None:
        self.error = error

    def open(self, spec: SessionSpec) -> None:
        raise self.error

    def verify(self, call: VerifyCall) -> Any:
        raise self.error

    def stats(self, timeout_s: float | None = None) -> Any:
        raise self.error

    def close(self, session_id: str) -> None:
        raise self.error


def _state_after(error: RequestError, method: str, *args: Any) -> str:
    watch = ServerWatch(("a:1",), lambda: 100.0, answered=frozenset({"a:1"}))
    (client,) = watch.watched((Failing(error),))
    with pytest.raises(RequestError):
        getattr(client, method)(*args)
    (seen,) = watch.seen()
    return seen.state


def test_a_verification_past_its_deadline_leaves_the_server_reachable() -> None:
    assert _state_after(LATE, "verify", VerifyCall("s", 3, (4,))) == REACHABLE


@pytest.mark.parametrize(
    ("error", "method", "args"),
    [
        (LATE, "stats", (1.0,)),
        (LATE, "close", ("s",)),
        (REFUSED, "verify", (VerifyCall("s", 3, (4,)),)),
    ],
    ids=["late-probe", "late-close", "refused-verify"],
)
def test_other_calls_past_their_deadline_and_refused_ones_make_it_unreachable(
    error: RequestError, method: str, args: tuple[Any, ...]
) -> None:
    assert _state_after(error, method, *args) == UNREACHABLE
