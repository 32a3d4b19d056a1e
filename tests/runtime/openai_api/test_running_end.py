"""A generation is counted ended before its reply can be written: ``Running``'s ``on_end``
(the endpoint's admission release) ran after the handler had the last item, so ``/ready``
could say ``running: 1`` to a client that already had its reply (a fresh-clone run's
test_server_health failed on it under load)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from edgespec.runtime.openai_api.streaming import Running


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
