"""A generation is counted ended before its reply can be written: ``Running``'s ``on_end``
(the endpoint's admission release) ran after the handler had the last item, so ``/ready``
could say ``running: 1`` to a client that already had its reply (a fresh-clone run's
test_server_health failed on it under load)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from edgespec.runtime.openai_api.streaming import MAX_TEXT_AHEAD, Running


@pytest.mark.parametrize("fails", [False, True])
def test_the_work_is_counted_ended_before_its_last_item_is_read(fails: bool) -> None:
    ended: list[str] = []

    def work(say: Any, cancel: threading.Event) -> Any:  # a Completion's stand-in
        if fails:
            raise RuntimeError("the server refused the token")
        return "completion"

    async def run() -> tuple[tuple[str, Any], list[str]]:
        running = Running(work, on_end=lambda: ended.append("ended"))
        last = await running.next()
        seen = list(ended)  # what a reply written now would find
        await asyncio.sleep(0.05)  # the executor future's own done callback comes later
        return last, seen

    for _ in range(20):  # the old order lost this race nearly every time
        ended.clear()
        (kind, value), seen = asyncio.run(run())
        assert kind == ("error" if fails else "done") and seen == ["ended"]
        assert ended == ["ended"]  # once, though both the worker and the future end it
        assert isinstance(value, RuntimeError) if fails else value == "completion"


def test_the_worker_runs_at_most_max_text_ahead_deltas_ahead_of_its_reader() -> None:
    """A stream read slowly held its whole output in the endpoint (the worker ran on into
    an unbounded queue); the worker now waits while MAX_TEXT_AHEAD deltas are not taken,
    and stops handing them on once cancelled (the client gone)."""
    handed: list[int] = []

    def work(say: Any, cancel: threading.Event) -> Any:
        for i in range(200):
            say(0, f"t{i}", None)
            handed.append(i)
        return "completion"

    async def run() -> tuple[int, int, list[str]]:
        running = Running(work)
        await asyncio.sleep(0.3)  # nothing taken: the worker waits
        waiting_at = len(handed)
        texts = []
        for _ in range(10):
            kind, value = await running.next()
            assert kind == "text"
            texts.append(value[1])
        await asyncio.sleep(0.3)
        running.cancel.set()  # the rest dropped: the worker ends
        return waiting_at, len(handed), texts

    waiting_at, then, texts = asyncio.run(run())
    assert (waiting_at, then) == (MAX_TEXT_AHEAD, MAX_TEXT_AHEAD + 10)
    assert texts == [f"t{i}" for i in range(10)]


def test_a_cancelled_worker_waiting_for_room_goes_on_without_handing_on() -> None:
    finished = threading.Event()

    def work(say: Any, cancel: threading.Event) -> Any:
        for _ in range(MAX_TEXT_AHEAD + 5):
            say(0, "x", None)
        finished.set()
        return "completion"

    async def run() -> None:
        running = Running(work)
        await asyncio.sleep(0.2)
        assert not finished.is_set()  # waiting for room
        running.cancel.set()
        await asyncio.sleep(0.5)
        assert finished.is_set()

    asyncio.run(run())
