"""Ctrl-C (SIGINT) and SIGTERM deferred while a block runs (:func:`signals_deferred`), so
that what it does is done whole: a client process's start (``edgespec bench serve``: a
signal raised inside ``Process.start()`` closed the pipe the spawned child was reading its
start data from, and the child's ``EOFError`` traceback was the run's last line), or a
session's close on the way out (:func:`edgespec.runtime.commands.signals.signals_held`).

Deferred by a Python handler that records the signal, not by blocking it
(``pthread_sigmask``): a blocked mask is inherited through ``fork`` and ``exec``, so each
child started meanwhile would start deaf to both; and multiprocessing's first start
unblocks them in the parent (as it starts its resource tracker). A handler is not inherited
through ``exec``."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOPS = (signal.SIGINT, signal.SIGTERM)


def on_main_thread() -> bool:
    """Whether this is the main thread, the only one that may set signal handlers."""
    return threading.current_thread() is threading.main_thread()


def _ignore(signum: int) -> None:
    """A deferred signal's default ``told``: nothing said."""


@contextmanager
def signals_deferred(told: Callable[[int], None] = _ignore, deliver: bool = True) -> Iterator[None]:
    """Ctrl-C and SIGTERM deferred while the block runs: each passed to ``told`` (its
    number) as it arrives; once the block ends (however it ends), the first delivered to
    the handler the block found, so it acts right after, unless not ``deliver``: then
    they are dropped. A signal the process ignores stays ignored; off the main thread
    (where no handler can be set) nothing changes."""
    if not on_main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)
        told(signum)

    found: dict[signal.Signals, Callable[[int, FrameType | None], Any] | int] = {}
    for stop in STOPS:
        handler = signal.getsignal(stop)
        if handler is not None and handler is not signal.SIG_IGN:  # None: not set from Python
            found[stop] = handler
            signal.signal(stop, hold)
    try:
        yield
    finally:
        for stop, handler in found.items():
            signal.signal(stop, handler)
        if held and deliver:
            signal.raise_signal(held[0])
