"""The threads fused runs hold: one started for each run and ended with it
(:class:`ThreadPerRun`), so that a burst of fused runs leaves no idle threads behind (a
``ThreadPoolExecutor`` keeps every worker it ever started: a burst of 60 fused runs left
72 threads for the server's life). The runs at once are bounded by the sessions the server
admits (one fused run per session), so no pool bound is needed; each run owns its thread
for all its rounds and never waits for another's."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class ThreadPerRun(Executor):
    """An :class:`~concurrent.futures.Executor` that runs each call submitted on a
    (daemon) thread of its own, named ``<name>_<n>``, which ends with the call."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._shut = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def run() -> None:
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn(*args, **kwargs))
                    except BaseException as exc:  # the future carries it to the caller
                        future.set_exception(exc)
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())

        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            thread = threading.Thread(
                target=run, name=f"{self._name}_{next(self._numbers)}", daemon=True
            )
            self._threads.add(thread)
        thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more calls; with ``wait``, return once the running ones have ended (a call
        already running is never cut: ``cancel_futures`` has nothing queued to cancel)."""
        with self._lock:
            self._shut = True
            running = list(self._threads)
        if wait:
            for thread in running:
                thread.join()

    @property
    def num_threads(self) -> int:
        """The threads running a call now."""
        with self._lock:
            return len(self._threads)
