""":func:`edgespec.runtime.deferred_signals.signals_deferred`: a signal that arrives inside
the block acts right after it, at the handler it found (or is dropped); and a process
started inside it does not start deaf to SIGTERM, the first start nor a later one (blocking
the signals with ``pthread_sigmask`` instead: the second child inherited the blocked mask,
and the first start unblocked them in the parent)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from edgespec.runtime.deferred_signals import signals_deferred


class _Stopped(Exception):
    """What this test's own handler raises."""


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def test_a_signal_in_the_block_acts_right_after_it() -> None:
    told: list[int] = []
    done: list[str] = []
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        with pytest.raises(_Stopped), signals_deferred(told.append):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            done.append("whole")
        with signals_deferred(deliver=False):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            done.append("dropped")
    finally:
        restored = signal.signal(signal.SIGTERM, previous)
    assert (told, done, restored) == ([signal.SIGTERM], ["whole", "dropped"], _raise_stopped)


def test_a_process_started_in_the_block_stops_on_sigterm() -> None:
    context = multiprocessing.get_context("spawn")
    exit_codes = []
    for _ in range(2):  # the first start also starts multiprocessing's resource tracker
        with signals_deferred():
            child = context.Process(target=time.sleep, args=(60,), daemon=True)
            child.start()
        time.sleep(0.5)  # its interpreter up
        child.terminate()  # SIGTERM
        child.join(30)
        exit_codes.append(child.exitcode)
    assert exit_codes == [-signal.SIGTERM, -signal.SIGTERM]
