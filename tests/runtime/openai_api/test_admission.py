"""The endpoint's admission counts each client's requests running or queued: a client at
its cap is refused with the exact 429, one that leaves the queue (or whose generation ends)
is counted out, and the map keeps only clients with requests."""

from __future__ import annotations

import asyncio

import pytest

from edgespec.runtime.openai_api.admission import Admission, Concurrency
from edgespec.runtime.openai_api.errors import ApiError


async def _cap_then_leave() -> None:
    admission = Admission(Concurrency(max_running=1, max_queued=4, max_per_client=2))
    try:
        await admission.acquire("a")  # running
        queued = asyncio.ensure_future(admission.acquire("a"))
        await asyncio.sleep(0)
        assert (admission.running, admission.queued, admission.num_clients) == (1, 1, 1)
        with pytest.raises(ApiError) as refused:
            await admission.acquire("a")
        assert (refused.value.status, refused.value.message) == (
            429,
            "the endpoint is busy: client a has 2 requests running or queued "
            "(--openai-max-per-client 2); retry after 1s",
        )
        other = asyncio.ensure_future(admission.acquire("b"))  # another client still queues
        await asyncio.sleep(0)
        queued.cancel()  # a's waiter left: counted out
        with pytest.raises(asyncio.CancelledError):
            await queued
        again = asyncio.ensure_future(admission.acquire("a"))  # a is under its cap again
        await asyncio.sleep(0)
        assert (admission.queued, admission.refused_per_client_total) == (2, 1)
        admission.releaser("a")()  # a's running generation ends: b's turn
        await other
        admission.releaser("b")()
        await again
        admission.releaser("a")()
        assert (admission.running, admission.queued, admission.num_clients) == (0, 0, 0)
        assert (admission.admitted_total, admission.refused_total) == (3, 1)
    finally:
        admission.executor.shutdown()


def test_a_client_at_its_cap_is_refused_and_counted_out_when_it_leaves() -> None:
    asyncio.run(_cap_then_leave())


async def _no_cap() -> None:
    admission = Admission(Concurrency(max_running=2, max_queued=0))
    try:
        await admission.acquire("a")
        await admission.acquire("a")  # no cap per client: the workers are the only limit
        with pytest.raises(ApiError, match="2 generations running and 0 queued"):
            await admission.acquire("b")
        assert admission.refused_per_client_total == 0
    finally:
        admission.executor.shutdown()


def test_without_a_cap_per_client_one_client_may_take_every_worker() -> None:
    asyncio.run(_no_cap())


def test_the_start_up_line_says_the_cap_per_client_where_there_is_one() -> None:
    assert Concurrency(8, 8).told() == "8 generations at once, 8 queued"
    assert Concurrency(8, 0, 2).told() == "8 generations at once, 0 queued, at most 2 per client"
