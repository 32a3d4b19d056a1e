"""How a long-running command ends on Ctrl-C (SIGINT) and SIGTERM (``kill PID``, systemd,
``docker stop``) alike: what it was doing is cleaned up (its sessions on the server closed,
an endpoint's requests drained), then one line on stderr (``interrupted``, ``terminated``)
and the shell's status for the signal, 128 + its number (130, 143).

Ctrl-C raises ``KeyboardInterrupt`` in the main thread; :func:`sigterm_raises` makes SIGTERM
raise :class:`Terminated` there too, while the command runs (installed by the command, the
previous handler put back as it returns). A bounded cleanup a signal would cut short (a
session's close on the server) runs with both held (:func:`signals_held`): a second Ctrl-C
is said and waits for it."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from edgespec.runtime.deferred_signals import on_main_thread, signals_deferred


class Terminated(BaseException):
    """SIGTERM, raised in the main thread as Ctrl-C raises ``KeyboardInterrupt``."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in the main thread within this block; a SIGTERM
    the process was started ignoring stays ignored, and a command run off the main thread
    (a test's, an embedding program's) leaves the process's handlers as they are."""
    if not on_main_thread() or signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def signals_held(command: str, doing: str, bound_s: float) -> AbstractContextManager[None]:
    """Ctrl-C and SIGTERM held while the block runs (``doing``, at most ``bound_s``): each
    said in one line on stderr; once the block ends, the first delivered to the handler
    it found, unless the block ran for a stop already under way (a ``KeyboardInterrupt`` or
    :class:`Terminated` being handled): then they are ignored. A signal the process ignores
    stays ignored; off the main thread nothing changes
    (:func:`~edgespec.runtime.deferred_signals.signals_deferred`)."""
    stopping = isinstance(sys.exc_info()[1], KeyboardInterrupt | Terminated)

    def say(signum: int) -> None:
        print(f"edgespec {command}: {signal.Signals(signum).name} while {doing}, which goes on "
              f"(at most {bound_s:g} s)", file=sys.stderr, flush=True)  # fmt: skip

    return signals_deferred(say, deliver=not stopping)


def stopped(command: str, signum: int) -> int:
    """Say that ``edgespec COMMAND`` was stopped by ``signum`` (``interrupted`` for SIGINT,
    ``terminated`` for SIGTERM), in one line on stderr; its exit status, 128 + ``signum``."""
    said = "interrupted" if signum == signal.SIGINT else "terminated"
    print(f"edgespec {command}: {said}", file=sys.stderr, flush=True)
    return 128 + signum
