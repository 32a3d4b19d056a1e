"""A generation's budget for making progress, not only for one round.

A round that fails fast (a server that drops every session, a pass the KV budget always
evicts, a request timeout far shorter than one verification) would otherwise be retried
forever, each reopen or replay making the server prefill the whole context again.
:class:`ProgressWatch` allows at most ``max_reconnects`` reconnects and replays of an
aborted round in a row without a committed token, and at most ``timeout_s`` since the last
committed token (or since the generation started), which alone bounds the resends of a call
past its deadline (the server goes on with the call: a resend costs it no work); past
either the drafter closes its session and raises :class:`NoProgress`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edgespec.runtime.errors import ErrorCode, RequestError

NO_PROGRESS_EXIT = 3
"""``edgespec draft``'s exit status when a generation gave up (:class:`NoProgress`)."""


@dataclass(frozen=True, slots=True)
class ProgressBudget:
    """At most ``max_reconnects`` reconnects (or replays) in a row, and ``timeout_s``
    seconds, without a committed token."""

    max_reconnects: int = 5
    timeout_s: float = 60.0


class NoProgress(RequestError):
    """The drafter gave up: its budget for committing a token ran out (an ``UNAVAILABLE``
    :class:`RequestError`, so callers that handle an unreachable server handle it)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNAVAILABLE, message)


class ProgressWatch:
    """Counts a generation's reconnects and time since its last committed token."""

    def __init__(self, budget: ProgressBudget, clock: Callable[[], float]) -> None:
        self._budget = budget
        self._clock = clock
        self._last_s = clock()
        self._num_committed = 0
        self._reconnects = 0
        self._replays = 0  # of those reconnects, rounds played again on the same session

    def committed(self, num_committed: int) -> None:
        """The generation has ``num_committed`` tokens now: more than before resets both
        budgets."""
        if num_committed > self._num_committed:
            self._num_committed = num_committed
            self._last_s = self._clock()
            self._reconnects = self._replays = 0

    def remaining_s(self) -> float:
        return self._budget.timeout_s - (self._clock() - self._last_s)

    def reconnect(self, cause: RequestError, replay: bool = False) -> None:
        """A reconnect (``replay``: the round played again on the same session) is about
        to happen after ``cause``: :class:`NoProgress` when it would exceed the budget."""
        self._reconnects += 1
        self._replays += replay
        if self._reconnects > self._budget.max_reconnects:
            tries, replays = self._budget.max_reconnects, self._replays - replay
            mixed = "reconnects and replays"
            kind = "reconnects" if replays == 0 else "replays" if replays == tries else mixed
            raise NoProgress(self._gave_up(f"{tries} {kind}", cause))
        self.check(cause)

    def check(self, cause: RequestError) -> None:
        """:class:`NoProgress` when the time budget ran out (``cause``: the last failure)."""
        if self.remaining_s() <= 0:
            raise NoProgress(self._gave_up(f"{self._budget.timeout_s:g} s", cause))

    def _gave_up(self, spent: str, cause: RequestError) -> str:
        return (
            f"gave up after {spent} without a committed token ({self._num_committed} "
            f"committed; last error {cause.code.value}: {cause.message})"
        )


def shorter_budget_warning(
    progress_timeout_s: float, request_timeout_s: float, progress_flag: str, request_flag: str
) -> str | None:
    """The warning for a progress budget shorter than one call's timeout (``None`` when it
    is not): each sending of a call waits at most what is left of the budget, so a call
    slower than the budget gives its request up, and the call timeout never applies. Not
    an error: a caller may want to give up that soon."""
    if progress_timeout_s >= request_timeout_s:
        return None
    return (
        f"warning: {progress_flag} {progress_timeout_s:g} is below {request_flag} "
        f"{request_timeout_s:g}: a verification call slower than {progress_timeout_s:g} s "
        f"gives its request up, and {request_flag} never applies"
    )
