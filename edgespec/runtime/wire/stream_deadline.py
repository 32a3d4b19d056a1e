"""A deadline for each message of a stream, not for the whole stream: a server-streaming
call (``Generate``) lasts as long as its generation, so no one deadline fits it, but a
server that accepted the call and then said nothing must not hold its client forever.
:class:`ChunkDeadline` cancels the call when a chunk the client waits for does not arrive
within ``timeout_s``; the time the caller spends between chunks is not counted
(:func:`next_chunk` waits for one under it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")


class ChunkDeadline:
    """Calls ``cancel`` (the call's) once ``timeout_s`` passed since :meth:`arm` without
    :meth:`disarm`; ``fired`` says it did. One watchdog thread per stream, started on
    entering the ``with`` block and ended on leaving it; ``clock``: the deadline's time."""

    def __init__(
        self,
        cancel: Callable[[], object],
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cancel = cancel
        self.timeout_s = timeout_s
        self._clock = clock
        self._deadline: float | None = None
        self._stopped = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="chunk-deadline")
        self.fired = False

    def __enter__(self) -> ChunkDeadline:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify()
        self._thread.join()

    def arm(self) -> None:
        """The client waits for the next chunk from now."""
        with self._changed:
            self._deadline = self._clock() + self.timeout_s
            self._changed.notify()

    def disarm(self) -> None:
        """A chunk (or the stream's end) arrived."""
        with self._changed:
            self._deadline = None

    def _watch(self) -> None:
        with self._changed:
            while not self._stopped:
                if self._deadline is None:
                    self._changed.wait()
                    continue
                left_s = self._deadline - self._clock()
                if left_s <= 0:
                    self.fired = True
                    break
                self._changed.wait(left_s)
            else:
                return
        self._cancel()  # outside the lock: the call's own callbacks may run in it


def next_chunk(call: Iterator[T], deadline: ChunkDeadline) -> T | None:
    """The stream's next chunk (``None`` at its end), waited for under ``deadline``."""
    deadline.arm()
    try:
        return next(call, None)
    finally:
        deadline.disarm()
