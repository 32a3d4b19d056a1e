"""A command's start-up, said on stderr as it goes (``edgespec serve``, ``edgespec draft``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


class Stages:
    """``edgespec COMMAND``'s start-up, said on stderr as it goes: each stage as it starts,
    after the seconds since start-up began (a first load is seconds to minutes of otherwise
    silent work), then ``ready``."""

    def __init__(self, command: str, clock: Callable[[], float] = time.perf_counter) -> None:
        self._prefix = f"edgespec {command}:"
        self._clock = clock
        self._start = clock()

    def _say(self, text: str) -> None:
        elapsed = self._clock() - self._start
        print(f"{self._prefix} [{elapsed:5.1f} s] {text}", file=sys.stderr, flush=True)

    def __call__(self, stage: str) -> None:
        self._say(f"{stage} ...")

    def done(self) -> None:
        self._say("ready")
