"""How a sweep's executors stop on Ctrl-C (SIGINT) and SIGTERM: the driver handles both
(the command says so in one line and exits 130 or 143); a local pool's workers ignore
SIGINT and die of SIGTERM (:func:`worker_signals`); Ray's ``ray.init`` replaces the
driver's handlers, which are put back (:func:`kept_stop_handlers`), and Ray's waits turn
only a ``KeyboardInterrupt`` raised in a handler into an error (any other exception is
printed and dropped), so SIGTERM reaches them as one (:func:`sigterm_interrupts`) and is
delivered again to the driver's handler once the wait has ended. A worker killed under an
item (out of memory, SIGKILL) ends the run with :class:`WorkerDied`, whichever engine."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


def worker_signals() -> None:
    """A pool worker's signals (its initializer): SIGINT ignored (a terminal's Ctrl-C reaches
    the whole group; the driver ends the workers), SIGTERM the default (die at once), not
    the handlers inherited from the driver."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def kept_stop_handlers() -> Iterator[None]:
    """The process's SIGINT and SIGTERM handlers as they were before the block, put back
    after it: ``ray.init`` installs its own for SIGTERM (``sys.exit(15)``, and a C++ handler
    that prints a stack dump), so a command's handler (``edgespec sim: terminated``, 143)
    wins. Off the main thread, or for a handler not set from Python, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {stop: signal.getsignal(stop) for stop in STOP_SIGNALS}
    try:
        yield
    finally:
        for stop, handler in kept.items():
            if handler is not None:
                signal.signal(stop, handler)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` (which a Ray wait raises
    again); the block ended by it, the handler found before is given that SIGTERM (the
    driver's raises its own exception, the default ends the process). Off the main thread,
    or with SIGTERM ignored or not handled from Python, nothing changes."""
    found = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or found in (
        None,
        signal.SIG_IGN,
    ):
        yield
        return
    got: list[int] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        got.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    except KeyboardInterrupt:
        if not got:
            raise
        signal.signal(signal.SIGTERM, found)
        signal.raise_signal(signal.SIGTERM)  # the driver's handler raises in its place
        raise
    finally:
        signal.signal(signal.SIGTERM, found)


class WorkerDied(Exception):
    """The process running item ``index`` died without an answer (killed: out of memory,
    SIGKILL): what :meth:`~edgespec.sweeps.executor.SweepExecutor.map_unordered` raises
    for it, whichever engine."""

    def __init__(self, index: int) -> None:
        super().__init__(f"the worker process running item {index} died")
        self.index = index
