"""The endpoint counts each client's requests in flight from their arrival: a client at its
cap is refused with the exact 429, a request counted out once however often it leaves, and
the map keeps only clients with requests; without a cap, the workers are the only limit."""

from __future__ import annotations

import asyncio

import pytest

from edgespec.runtime.openai_api.admission import Admission, Concurrency
from edgespec.runtime.openai_api.errors import ApiError


def test_a_client_at_its_cap_is_refused_and_counted_out_as_its_requests_end() -> None:
    admission = Admission(Concurrency(max_running=1, max_queued=4, max_per_client=2))
    try:
        first, second = admission.hold("a"), admission.hold("a")
        with pytest.raises(ApiError) as refused:
            admission.hold("a")
        assert (refused.value.status, refused.value.message, refused.value.retry_after_s) == (
            429,
            "the endpoint is busy: client a has 2 requests in flight "
            "(--openai-max-per-client 2); retry after 1s",
            1,
        )
        other = admission.hold("b")  # another client is not capped by a's
        assert admission.num_clients == 2
        first.leave()
        first.leave()  # counted out once
        third = admission.hold("a")  # under its cap again
        with pytest.raises(ApiError, match="client a has 2 requests in flight"):
            admission.hold("a")
        for hold in (second, third, other):
            hold.leave()
        assert admission.num_clients == 0
        with admission.hold("c"):  # the tokenizer routes' way: counted out as the block ends
            assert admission.num_clients == 1
        assert admission.num_clients == 0
        assert (admission.refused_total, admission.refused_per_client_total) == (2, 2)
        assert "edgespec_openai_requests_refused_per_client_total 2\n" in admission.metrics()
    finally:
        admission.executor.shutdown()


async def _no_cap() -> None:
    admission = Admission(Concurrency(max_running=2, max_queued=0))
    try:
        holds = [admission.hold("a") for _ in range(5)]  # no cap per client
        await admission.acquire()
        await admission.acquire()
        with pytest.raises(ApiError, match="2 generations running and 0 queued"):
            await admission.acquire()
        assert (admission.refused_per_client_total, admission.num_clients, len(holds)) == (0, 1, 5)
    finally:
        admission.executor.shutdown()


def test_without_a_cap_per_client_the_workers_are_the_only_limit() -> None:
    asyncio.run(_no_cap())


def test_the_start_up_line_says_the_cap_per_client_where_there_is_one() -> None:
    assert Concurrency(8, 8).told() == "8 generations at once, 8 queued"
    assert Concurrency(8, 0, 2).told() == "8 generations at once, 0 queued, at most 2 per client"
