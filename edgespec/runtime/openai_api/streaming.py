"""A request's generation (its choices) in a worker thread, its text deltas handed to the
event loop as they commit, tagged with their choice's index; as server-sent events
(``data: {...}`` lines, ``data: [DONE]`` last).
The stream ending early (the client gone) sets the worker's cancel event: the worker
stops at the next round and closes its session on the verification server. The worker
runs at most :data:`MAX_TEXT_AHEAD` deltas ahead of what the stream took: a client that
reads slowly slows its generation down, and holds no more of its output than that (the
whole output waited in the endpoint's memory, however slowly it was read)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from typing import Any

from starlette.responses import JSONResponse

from edgespec.runtime.openai_api.choices import Choices
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs
from edgespec.runtime.openai_api.responses import Shape

Work = Callable[[Callable[[int, str, ChoiceLogprobs | None], None], threading.Event], Choices]
"""``work(on_text, cancel)``: runs the request in the calling (worker) thread, calling
``on_text(choice index, delta, the log-probabilities of the tokens it shows)``."""

Item = tuple[str, Any]  # ("text", (index, str, logprobs)) | ("done", Choices) | ("error", exc)

MAX_TEXT_AHEAD = 64
"""The most text deltas the worker hands on that have not been taken (:meth:`Running.next`)."""


class Running:
    """``work`` started in ``executor`` (the loop's default one when ``None``); :meth:`next`
    awaits its next item; ``on_end`` is called once on the loop as the work ends, before
    its last item (the result or the error) can be read: a reply written from that item
    finds the work counted ended (``/ready`` said ``running: 1`` to a client that had its
    reply); ``finished`` is set in the worker as it ends (seen from any thread)."""

    def __init__(
        self, work: Work, executor: Executor | None = None, on_end: Callable[[], None] | None = None
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        self.cancel = threading.Event()
        self.finished = threading.Event()
        self._room = threading.Semaphore(MAX_TEXT_AHEAD)  # deltas the worker may still hand on
        self._on_end = on_end
        self._future = self._loop.run_in_executor(executor, self._run, work)
        self._future.add_done_callback(lambda _: self._end())  # a work that never ran too

    def _end(self) -> None:
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            on_end()

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed (shutdown): nobody reads
            self._loop.call_soon_threadsafe(callback, *args)

    def _put(self, item: Item) -> None:
        self._call(self._queue.put_nowait, item)

    def _put_text(self, *delta: Any) -> None:
        """Hand a delta on once there is room (a delta not taken yet leaves), or drop it
        once the work is cancelled (the client gone: nobody takes it)."""
        while not self.cancel.is_set():
            if self._room.acquire(timeout=0.05):
                self._put(("text", delta))
                return

    def _run(self, work: Work) -> None:
        try:
            last: Item = ("done", work(self._put_text, self.cancel))
        except BaseException as exc:  # handed to the loop, which raises or reports it
            last = ("error", exc)
        finally:
            self.finished.set()
        self._call(self._end)  # the loop runs it before it delivers the last item
        self._put(last)

    async def next(self) -> Item:
        item = await self._queue.get()
        if item[0] == "text":
            self._room.release()
        return item

    async def result(self) -> Choices:
        """The whole completion (text deltas dropped); the worker's error is raised here."""
        try:
            while True:
                kind, value = await self.next()
                if kind == "done":
                    return value  # type: ignore[no-any-return]
                if kind == "error":
                    raise value
        finally:
            self.cancel.set()  # a no-op once done; stops the worker if this await was cancelled


def event(body: dict[str, Any]) -> str:
    """One server-sent event, its JSON rendered as every other body the endpoint sends
    (Starlette's ``JSONResponse``: compact, UTF-8)."""
    return f"data: {bytes(JSONResponse(body).body).decode()}\n\n"


async def sse(
    running: Running,
    first: Item,
    shape: Shape,
    error_body: Callable[[BaseException], dict[str, Any]],
) -> AsyncIterator[str]:
    """The events of a stream whose ``first`` item was already taken (to answer errors
    before any headers are sent); an error after that is an ``{"error": ...}`` event."""
    item, num_chunks = first, [0] * shape.num_choices
    try:
        while True:
            kind, value = item
            if kind == "text":
                index, text, logprobs = value
                first_one = num_chunks[index] == 0
                yield event(shape.chunk(text, first=first_one, index=index, logprobs=logprobs))
                num_chunks[index] += 1
            elif kind == "done":
                for index, done in enumerate(value.completions):
                    if num_chunks[index] == 0 and shape.chat:  # nothing generated: the role
                        yield event(shape.chunk("", first=True, index=index))
                    yield event(shape.chunk("", done.finish_reason, index=index))
                if shape.include_usage:
                    yield event(shape.usage_chunk(value))
                break
            else:
                yield event(error_body(value))
                break
            item = await running.next()
        yield "data: [DONE]\n\n"
    finally:
        running.cancel.set()  # the client gone (this generator cancelled) ends the work
