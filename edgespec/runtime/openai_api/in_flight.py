"""The requests an endpoint has in flight, as a stopping endpoint needs them
(:mod:`.stopping`): how many it has taken and not answered (reading their body, their
prompt tokenized, waiting for a worker, generating), and a way to cancel them all.

A cancelled generation ends at its next round (or within one retry backoff while its server
is unreachable) and closes its session on the verification server; its client gets
:func:`endpoint_stopping`, a 503 (a stream that began: an error event, then ``[DONE]``). A
request that reaches a worker after that is refused the same way before it starts."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from edgespec.runtime.openai_api.errors import ApiError
from edgespec.runtime.openai_api.streaming import Running


def endpoint_stopping() -> ApiError:
    """The 503 of a request cancelled because the endpoint is stopping."""
    return ApiError(503, "the endpoint is stopping: this request was cancelled before it "
                    "finished", kind="server_error", code="endpoint_stopping")  # fmt: skip


class Accepted:
    """One request an :class:`InFlight` counts from when the endpoint took it until it is
    answered or its generation starts (:meth:`InFlight.started`: counted as that since)."""

    __slots__ = ("counted",)

    def __init__(self) -> None:
        self.counted = True


class InFlight:
    """The endpoint's requests taken and not yet generating (:meth:`accepted`) and its
    generations running (their :class:`~.streaming.Running`), counted and cancelled from
    any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: list[Running] = []
        self._num_accepted = 0
        self._cancelled = False

    @contextmanager
    def accepted(self) -> Iterator[Accepted]:
        """Counted as in flight from now (its body still to read, its prompt to tokenize, a
        worker to wait for) until the block ends or its generation starts."""
        place = Accepted()
        with self._lock:
            self._num_accepted += 1
        try:
            yield place
        finally:
            with self._lock:
                self._uncount(place)

    def _uncount(self, place: Accepted) -> None:
        """``place`` no longer counted as accepted (under the lock)."""
        if place.counted:
            place.counted = False
            self._num_accepted -= 1

    def started(self, running: Running, place: Accepted) -> None:
        """``running`` is the generation of the request at ``place``, counted as that from
        now; cancelled at once if the requests in flight were."""
        with self._lock:
            self._uncount(place)
            self._running = [r for r in self._running if not r.finished.is_set()]
            self._running.append(running)
            if self._cancelled:
                running.cancel.set()

    def check_open(self) -> None:
        """:func:`endpoint_stopping` once the requests in flight were cancelled: a request
        that got a worker after that does not start."""
        if self._cancelled:
            raise endpoint_stopping()

    def count(self) -> int:
        """The requests taken and not yet generating, and the generations not yet ended."""
        with self._lock:
            return self._num_accepted + sum(1 for r in self._running if not r.finished.is_set())

    def generating(self) -> int:
        """The generations not yet ended (their workers still busy)."""
        with self._lock:
            return sum(1 for r in self._running if not r.finished.is_set())

    def cancel_all(self) -> int:
        """Cancel every request in flight, and any that gets a worker later; how many
        there were."""
        with self._lock:
            self._cancelled = True
            left = [r for r in self._running if not r.finished.is_set()]
            num = self._num_accepted + len(left)
        for running in left:
            running.cancel.set()
        return num
