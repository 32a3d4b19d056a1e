"""``edgespec reproduce wisp-serving``'s clients start together: the run's ``--seconds``
begin when every client is connected. They began when the first process was spawned, so a
client that took longer to start (0.6 s alone on an idle machine, seconds for many on a busy
one) got what was left of the window, and with ``--seconds 0.5`` often nothing."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from edgespec.errors import UserInputError
from edgespec.reproduce.wisp.serving_clients import ClientResult, StartLine, start_together


@dataclass
class FakeWorker:
    exitcode: int | None = None


def _line() -> StartLine:
    return StartLine(queue.Queue(), threading.Event(), SimpleNamespace(value=0.0))


def test_the_window_starts_when_the_last_client_is_connected() -> None:
    line, connected_at = _line(), []

    def connect(index: int, after_s: float) -> None:
        time.sleep(after_s)
        connected_at.append(time.time())
        line.ready.put(index)

    threads = [threading.Thread(target=connect, args=(i, d)) for i, d in [(0, 0.0), (1, 1.0)]]
    for t in threads:
        t.start()
    until = start_together(line, queue.Queue(), [FakeWorker(), FakeWorker()], ["a"], 0.5)
    for t in threads:
        t.join()
    assert line.go.is_set() and line.until.value == until
    assert until - max(connected_at) >= 0.5  # the slow client's whole 0.5 s, not none of it


def test_a_client_that_exits_before_it_connects_is_named_with_its_error() -> None:
    line, out = _line(), queue.Queue[ClientResult]()
    line.ready.put(0)
    out.put(ClientResult(1, error="RuntimeError: no server"))
    with pytest.raises(UserInputError) as caught:
        start_together(line, out, [FakeWorker(), FakeWorker(exitcode=1)], ["a", "b"], 0.5)
    assert str(caught.value) == "client 1 (class b) failed: RuntimeError: no server"
    assert not line.go.is_set()


def test_a_client_killed_before_it_connects_is_named() -> None:
    line = _line()
    started = time.monotonic()
    with pytest.raises(UserInputError) as caught:
        start_together(line, queue.Queue(), [FakeWorker(exitcode=-9)], ["gold"], 0.5)
    assert str(caught.value) == "client 0 (class gold) exited with -9 before the run started"
    assert time.monotonic() - started < 5 and not line.go.is_set()
