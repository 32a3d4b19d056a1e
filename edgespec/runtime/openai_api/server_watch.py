"""What the endpoint last saw of each verification server: the outcome of every real call
(:class:`Watched`, in place of each server's client) and of the short probes ``/health``
and ``/ready`` start when no call is recent (:mod:`.health`).

A server is ``reachable`` (its last call answered, a refusal of a request included),
``unreachable`` (the last one failed ``UNAVAILABLE``: down, restarting, or silent past the
call's deadline; a verification past its deadline tells nothing: busy with its pass),
``refusing_token`` (``UNAUTHENTICATED`` or ``PERMISSION_DENIED``: it does not take the
endpoint's own ``--auth-token``), or ``unknown`` (nothing asked yet); each state since the
call that set it. The endpoint is ready while one server is reachable.
A server that answers again ends the outage :class:`~.outages.OutageLog` may have opened
(each 503 ``unavailable`` told to it, :meth:`ServerWatch.note`, with whether a server was
reachable then, under the lock a server answering takes: so none is counted twice, or in
an outage a server's answer already ended).
Every server unreachable for longer than a request would wait for one: its 503 is due at
once (:meth:`ServerWatch.unreachable_for_s`, :meth:`ServerWatch.unreachable_error`). A
server told unreachable a moment ago is not asked by a new request's routing
(:meth:`ServerWatch.known_down`): a hung one would hold each routing round 1 s."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from edgespec.runtime.edge.bounded_calls import open_bounded, verify_bounded
from edgespec.runtime.edge.fused_handover import fused_if
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    ServerStats,
    SessionSpec,
    VerifyCall,
    VerifyReply,
)
from edgespec.runtime.openai_api.errors import ApiError, clip, from_request_error
from edgespec.runtime.openai_api.outages import UNAVAILABLE_CODE, OutageLog

REACHABLE, UNREACHABLE, REFUSING, UNKNOWN = "reachable", "unreachable", "refusing_token", "unknown"
STATES = (REACHABLE, UNREACHABLE, REFUSING, UNKNOWN)

NOTHING_LEARNED = frozenset({ErrorCode.INVALID_ARGUMENT, ErrorCode.CANCELLED})
"""Failures that say nothing of the server: this client's own checks before a call (a
message over its size limit) and a call it cancelled."""


def state_of(error: RequestError | None) -> str | None:
    """The state a call's outcome (``None``: it answered) shows, ``None`` if none."""
    if error is None:
        return REACHABLE
    if error.code is ErrorCode.UNAVAILABLE:
        return UNREACHABLE
    if error.code in (ErrorCode.UNAUTHENTICATED, ErrorCode.PERMISSION_DENIED):
        return REFUSING
    return None if error.code in NOTHING_LEARNED else REACHABLE


@dataclass(frozen=True, slots=True)
class Seen:
    """One server's last known ``state``, since ``since_s`` (on the watch's clock;
    ``since_unix_s`` on the wall clock), last told at ``told_s`` (``told_unix_s``;
    ``None``: never), and the failure behind a state other than ``reachable``."""

    state: str
    since_s: float
    since_unix_s: float
    told_s: float | None = None
    told_unix_s: float | None = None
    error: str | None = None


class ServerWatch:
    """The :class:`Seen` of each server at ``addresses`` (in the order of the endpoint's
    clients), told from any thread; times on ``clock`` (seconds, monotonic) and
    ``wall_clock`` (Unix seconds); its outages logged (:class:`~.outages.OutageLog`, on
    ``clock`` too); the servers that ``answered`` the endpoint's start reachable from it."""

    def __init__(
        self,
        addresses: tuple[str, ...],
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        answered: frozenset[str] = frozenset(),
    ) -> None:
        self.addresses = addresses
        self.outages = OutageLog(clock)
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        start = Seen(UNKNOWN, clock(), wall_clock())
        self._seen = [start] * len(addresses)
        for index, address in enumerate(addresses):
            if address in answered:  # it answered the endpoint's start (Health, its token)
                self.tell(index, None)

    def tell(self, index: int, error: RequestError | None) -> None:
        """A call to server ``index`` answered (``error`` ``None``) or failed with ``error``."""
        state = state_of(error)
        if state is None:
            return
        now_s, now_unix_s = self._clock(), self._wall_clock()
        said = None if error is None or state == REACHABLE else clip(str(error), 200)
        seen = Seen(state, now_s, now_unix_s, now_s, now_unix_s, said)
        with self._lock:
            last = self._seen[index]
            if last.state == state:  # still so: since the call that made it so
                seen = dataclasses.replace(seen, since_s=last.since_s,
                                           since_unix_s=last.since_unix_s)  # fmt: skip
            self._seen[index] = seen
            if state == REACHABLE:  # under the lock: a 503 told meanwhile sees it or not
                self.outages.answered(self.addresses[index], now_s)

    def note(self, error: ApiError, streamed: bool = False) -> None:
        """A request answered ``error`` (``streamed``: its stream, answered 200, ended with
        it): a 503 for no server reachable is counted in the outage, the first one opening
        it; one answered as a server was reachable again (or another one was), in the next
        line (:meth:`.outages.OutageLog.refused`)."""
        if error.status == 503 and error.code == UNAVAILABLE_CODE:
            with self._lock:  # none reachable: since the last one was lost
                reachable = any(one.state == REACHABLE for one in self._seen)
                down_since_s = max((one.since_s for one in self._seen), default=self._clock())
                self.outages.refused(error.message, down_since_s, reachable, streamed)

    def unreachable_for_s(self, fresh_s: float | None = None) -> float:
        """How long every server has been unreachable (since the last one was lost): 0 while
        one is in another state or, given ``fresh_s``, was last told of ``fresh_s`` or more
        ago (it may be back since)."""
        seen, now_s = self.seen(), self._clock()
        for one in seen:
            stale = fresh_s is not None and (one.told_s is None or now_s - one.told_s >= fresh_s)
            if one.state != UNREACHABLE or stale:
                return 0.0
        return now_s - max((one.since_s for one in seen), default=now_s)

    def known_down(self, fresh_s: float) -> frozenset[int]:
        """The servers (indices) unreachable as told less than ``fresh_s`` ago: routing need
        not ask them (:func:`~edgespec.runtime.edge.routing.route`); one told of longer ago
        may be back, and one a call or probe found answering is reachable again."""
        now_s = self._clock()
        return frozenset(index for index, one in enumerate(self.seen())
                         if one.state == UNREACHABLE and one.told_s is not None
                         and now_s - one.told_s < fresh_s)  # fmt: skip

    def unreachable_error(self, down_s: float, retry_timeout_s: float) -> ApiError:
        """The 503 of a request not made to wait for a server: none has answered for
        ``down_s``, longer than it would wait (``retry_timeout_s``); the body and headers of
        the 503 a request gets once it waited that long (:func:`.errors.from_request_error`)."""
        num = len(self.addresses)
        who = "it has not" if num == 1 else f"none of the {num} servers has"
        why = (f"{who} answered for {down_s:.1f} s, longer than --retry-timeout-s "
               f"({retry_timeout_s:g} s): the request did not wait (see /health)")  # fmt: skip
        return from_request_error(RequestError(ErrorCode.UNAVAILABLE, why))

    def watched(self, clients: tuple[Any, ...]) -> tuple[Watched, ...]:
        """The servers' ``clients`` (in the order of ``addresses``), each call watched (a
        :class:`FusedWatched` of a client that runs fused rounds)."""
        if len(clients) != len(self.addresses):
            raise ValueError(f"{len(clients)} clients of {len(self.addresses)} servers")
        return tuple(fused_if(client, Watched, FusedWatched)(client, self, index)
                     for index, client in enumerate(clients))  # fmt: skip

    def seen(self) -> tuple[Seen, ...]:
        with self._lock:
            return tuple(self._seen)

    def ready(self) -> bool:
        """Whether a server is reachable: a request may be served now."""
        return any(seen.state == REACHABLE for seen in self.seen())


class Watched:
    """Server ``index``'s client ``inner``, each call's outcome told to ``watch``; any other
    attribute is the client's, but the verifier's methods are declared here (a Protocol's
    ``isinstance`` does not see ``__getattr__`` from Python 3.12 on)."""

    def __init__(self, inner: Any, watch: ServerWatch, index: int) -> None:
        self._inner = inner
        self._watch = watch
        self._index = index

    def _told(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            result = call(*args)
        except RequestError as exc:
            self._watch.tell(self._index, exc)
            raise
        self._watch.tell(self._index, None)
        return result

    def open(self, spec: SessionSpec) -> None:
        self._told(self._inner.open, spec)

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None:
        """The client's bounded open (:func:`~edgespec.runtime.edge.bounded_calls.open_bounded`),
        told: one cut short by ``cancel`` tells nothing."""
        self._told(open_bounded, self._inner, spec, timeout_s, cancel)

    def verify(self, call: VerifyCall) -> VerifyReply:
        """The call, told; one past its deadline tells nothing: the server took it, and a
        verification waits for its queue and pass (a long prompt's first round makes a
        server busy that long, and the drafter sends the call again). A silent server is
        told by its opens and the probes (:mod:`.health`), which wait on no pass."""
        return self._verify_told(self._inner.verify, call)

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply:
        """The client's bounded verify
        (:func:`~edgespec.runtime.edge.bounded_calls.verify_bounded`), told as :meth:`verify`."""
        return self._verify_told(verify_bounded, self._inner, call, timeout_s, cancel)

    def _verify_told(self, verify: Callable[..., VerifyReply], *args: Any) -> VerifyReply:
        try:
            reply = verify(*args)
        except RequestError as exc:
            if not exc.past_deadline:
                self._watch.tell(self._index, exc)
            raise
        self._watch.tell(self._index, None)
        return reply

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """The client's server-side decoding (a centralized request's), told as
        :meth:`verify`: its first chunk that the server answered, a failure before or after
        it (one past its deadline tells nothing)."""
        told = False
        try:
            for chunk in self._inner.generate(*args, **kwargs):
                if not told:
                    self._watch.tell(self._index, None)
                    told = True
                yield chunk
        except RequestError as exc:
            if not exc.past_deadline:
                self._watch.tell(self._index, exc)
            raise

    def close(self, session_id: str) -> None:
        self._told(self._inner.close, session_id)

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        """The server's counters, within ``timeout_s`` (a probe's; default the client's)."""
        ask = self._inner.stats if timeout_s is None else partial(self._inner.stats, timeout_s)
        stats: ServerStats = self._told(ask)
        return stats

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class FusedWatched(Watched):
    """A :class:`Watched` client that runs fused rounds (a ``FusedVerifier``); a fused run
    is passed on untold, as before."""

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        rounds: Iterator[FusedRound] = self._inner.run_fused(call)
        return rounds
