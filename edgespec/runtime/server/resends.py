"""The scheduler's queue entries, and what becomes of a verify call sent again after its
caller's deadline passed (the drafter's resend,
:meth:`~edgespec.runtime.edge.round_loop.RoundLoop.verify`): the same call still queued or
being verified is taken over (:func:`take_over`: its place, its pass, its prefill parts);
one whose caller left it queued, or between prefill parts, gives the resend its arrival and
deadline (:class:`LeftCalls`), so a resent call keeps its place in the batching policy's
order; one whose caller's deadline passed before its pass is left so too
(:func:`still_waiting`)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from edgespec.core.types import PendingVerification
from edgespec.runtime.errors import DEADLINE_EXCEEDED, ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyReply
from edgespec.runtime.server.engine_checks import same_request


@dataclass(slots=True)
class QueueEntry:
    """An admitted call in the scheduler's queue or its batch being verified."""

    pending: PendingVerification
    call: VerifyCall
    serial: int  # the session it was admitted for (SessionTable.session_serial)
    future: asyncio.Future[VerifyReply]
    closed: bool = False  # its session closed while its batch ran
    expires_s: float = math.inf  # its caller's deadline, on the scheduler's clock
    parts_s: float = 0.0  # the passes of its prefill parts so far: verifying, not queued


def take_over(entries: Iterable[QueueEntry], call: VerifyCall) -> QueueEntry | None:
    """The entry of ``call``'s session among ``entries`` (queued or being verified), its
    future replaced by a new one for ``call``'s caller, when ``call`` sends it again
    (``same_request``); an earlier caller still waiting gets ``FAILED_PRECONDITION``.
    ``None``: the session has no entry, or one of another call."""
    for entry in entries:
        if entry.closed or entry.call.session_id != call.session_id:
            continue
        if not same_request(call, entry.call):
            return None
        earlier, entry.future = entry.future, asyncio.get_running_loop().create_future()
        if not earlier.done():
            earlier.set_exception(RequestError(
                ErrorCode.FAILED_PRECONDITION,
                f"session {call.session_id!r}: a resend of this verification took it over",
            ))  # fmt: skip
        return entry
    return None


class LeftCalls:
    """Per session, the last call its caller left queued or between prefill parts (one a
    session at most; forgotten when the session closes or a call of it is queued).
    ``serial_of``: the serial of the open session of an id."""

    __slots__ = ("_left", "_serial_of")

    def __init__(self, serial_of: Callable[[str], int]) -> None:
        self._left: dict[str, QueueEntry] = {}
        self._serial_of = serial_of

    def left(self, entry: QueueEntry) -> None:
        self._left[entry.call.session_id] = entry

    def forget(self, session_id: str) -> None:
        self._left.pop(session_id, None)

    def _sent_before(self, call: VerifyCall) -> QueueEntry | None:
        """The entry ``call`` sends again to the same session, left by its caller."""
        left = self._left.get(call.session_id)
        if left is None or left.serial != self._serial_of(call.session_id):
            return None
        return left if same_request(call, left.call) else None

    def arrival_kept(self, pending: PendingVerification, call: VerifyCall) -> PendingVerification:
        """``pending`` (``call`` admitted) with the arrival and deadline of its earlier
        sending, when its caller left it and ``call`` sends it again to the same session
        (kept until ``call`` is queued: :meth:`queued`)."""
        left = self._sent_before(call)
        if left is None:
            return pending
        earlier = left.pending
        return replace(pending, enqueued_s=earlier.enqueued_s, deadline_s=earlier.deadline_s)

    def queued(self, call: VerifyCall) -> float:
        """``call`` is queued: what its session's caller left is forgotten; the passes of
        the earlier prefill parts of the call it sends again (0: none)."""
        left = self._sent_before(call)
        self._left.pop(call.session_id, None)
        return 0.0 if left is None else left.parts_s


def still_waiting(taken: list[QueueEntry], now_s: float, left: LeftCalls) -> list[QueueEntry]:
    """The entries of ``taken`` (for a pass at ``now_s``) whose callers still wait: one
    whose deadline has passed is answered so and ``left`` (a resend keeps its place), as a
    caller that went away; gRPC cancels its handler only a moment after its deadline, when
    its pass may have started."""
    for e in taken:
        if e.expires_s <= now_s and not e.future.done():
            message = f"{DEADLINE_EXCEEDED} before this verification's pass: nothing verified"
            e.future.set_exception(RequestError(ErrorCode.UNAVAILABLE, message))
            left.left(e)
    return [e for e in taken if not e.future.done()]
