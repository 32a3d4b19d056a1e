"""A request's waits that end when its client leaves: for its turn in a line, for a
stream's first item, for a whole completion. Each is polled every ``DISCONNECT_POLL_S``;
a client gone first gives its place up or has its work ended, and gets a 499."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from edgespec.runtime.openai_api.choices import Choices
from edgespec.runtime.openai_api.errors import ApiError
from edgespec.runtime.openai_api.streaming import Item, Running

DISCONNECT_POLL_S = 0.25


async def done_unless_gone(request: Request, task: asyncio.Future[Any]) -> bool:
    """Wait for ``task``; ``False`` when the client left first (checked every
    ``DISCONNECT_POLL_S``), the task still pending."""
    while True:
        done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
        if done:
            return True
        if await request.is_disconnected():
            return False


def client_left() -> ApiError:
    return ApiError(499, "the client closed the request", code="client_closed_request")


async def waited(request: Request, acquire: Awaitable[None], release: Callable[[], None]) -> None:
    """Wait in a line (``acquire``) for a place; a client that leaves first gives its place
    up, so it neither holds the line's room nor takes a turn later."""
    turn = asyncio.ensure_future(acquire)
    if await done_unless_gone(request, turn):
        return turn.result()  # the 429, when refused
    turn.cancel()
    try:
        await turn
    except asyncio.CancelledError:
        raise client_left() from None
    release()  # its turn came just as it left
    raise client_left()


async def first_item(request: Request, running: Running) -> Item:
    """A stream's first item, taken before any header is sent (its text, or its error:
    a server still unreachable past the retry timeout is a 503); a client that leaves
    first raises :func:`client_left` (the caller ends the work)."""
    first = asyncio.ensure_future(running.next())
    if await done_unless_gone(request, first):
        return first.result()
    first.cancel()
    raise client_left()


async def whole(request: Request, running: Running) -> Choices:
    """The whole completion; a client that leaves before it is done ends the work at its
    next round, and its session is closed."""
    result = asyncio.ensure_future(running.result())
    if await done_unless_gone(request, result):
        return result.result()
    result.cancel()  # running.result() sets the worker's cancel event
    raise client_left()
