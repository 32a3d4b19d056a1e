"""A load's arrivals: every request id begins with the run's random tag; Poisson arrivals
are each told to the parent, queued up to ``max_queued`` (one more is dropped), taken only
while the arrivals last, and those no client started are counted never served."""

from __future__ import annotations

import queue
import re
import socket
import time
from typing import Any

import pytest

from edgespec.errors import UserInputError
from edgespec.runtime.loadgen.messages import Arrived
from edgespec.runtime.loadgen.run import LoadRun, new_run_tag
from edgespec.runtime.loadgen.spec import LoadSpec, ServerAccess, SloShare
from edgespec.runtime.loadgen.worker import (
    Job,
    WorkerSpec,
    _Client,
    _closed_loop,
    _poisson_arrivals,
    _poisson_client,
)

MIX = (SloShare("a", None, 0.5), SloShare("b", 5.0, 0.5))


class _Pipe:
    """The parent's end of a client process's pipe, as a list."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, message: object) -> None:
        self.sent.append(message)


def _client(load: LoadSpec, client_ids: tuple[str, ...] = ("c0",)) -> _Client:
    spec = WorkerSpec(0, 2, "feedc0de", client_ids, ServerAccess("127.0.0.1:1"), ((1,), (2,)),
                      load, 64)  # fmt: skip
    return _Client(spec, conn=_Pipe())


def _poisson(rate: float, max_queued: int) -> LoadSpec:
    return LoadSpec(3, 1, "poisson", rate, 0.5, 1.0, MIX, 8, 4, "ngram", 7,
                    max_queued=max_queued)  # fmt: skip


def test_run_tags_are_random_hex() -> None:
    tags = {new_run_tag() for _ in range(20)}
    assert len(tags) == 20 and all(re.fullmatch(r"[0-9a-f]{8}", t) for t in tags)


def test_closed_loop_ids_carry_the_run_tag() -> None:
    load = LoadSpec(1, 1, "closed", None, 1.0, 1.0, MIX, 8, 4, "ngram", 0)
    client = _client(load, ("feedc0de.client-000", "feedc0de.client-001"))  # as LoadRun names
    client.end_s = time.monotonic() + 60
    ids: list[str] = []

    def run(client_id: str, job: Job) -> None:
        ids.append(job.request_id)
        if len(ids) == 2:
            client.end_s = 0.0

    client.run = run  # type: ignore[method-assign]
    _closed_loop(client, 1)
    assert ids == ["feedc0de.client-001.2.0", "feedc0de.client-001.2.1"]


def test_poisson_arrivals_beyond_the_queue_bound_are_dropped() -> None:
    """About rate × duration arrivals, in time order inside the run, each told to the
    parent with its class; the first 5 queued (nobody takes them here), the rest dropped."""
    client = _client(_poisson(400.0, 5))
    start = time.monotonic()
    client.end_s = start + 0.5
    jobs: queue.Queue[Job] = queue.Queue(maxsize=5)
    _poisson_arrivals(client, jobs)
    said = client._conn.sent
    assert all(isinstance(m, Arrived) for m in said)
    assert 140 <= len(said) <= 260  # 200 expected, 7 standard deviations apart
    assert [m.dropped for m in said] == [False] * 5 + [True] * (len(said) - 5)  # type: ignore[attr-defined]
    queued = [jobs.get_nowait() for _ in range(jobs.qsize())]
    assert [j.request_id for j in queued] == [f"feedc0de.w0.2.{n}" for n in range(5)]
    assert [m.request_id for m in said] == [f"feedc0de.w0.2.{n}" for n in range(len(said))]  # type: ignore[attr-defined]
    times = [j.arrival_s for j in queued]
    assert times == sorted(times) and start <= times[0] and times[-1] < start + 0.5
    assert {m.slo_index for m in said} == {0, 1}  # type: ignore[attr-defined]


def test_a_queued_arrival_is_not_started_after_the_arrivals_end() -> None:
    """A client busy past the end of arrivals takes no other queued job: it returns."""
    client = _client(_poisson(1.0, 8))
    jobs: queue.Queue[Job] = queue.Queue(maxsize=8)
    for n in range(3):
        jobs.put(Job(f"j{n}", 0, 0, time.monotonic()))
    client.end_s = time.monotonic() + 0.2
    taken: list[str] = []

    def run(client_id: str, job: Job) -> None:
        taken.append(job.request_id)
        time.sleep(0.3)

    client.run = run  # type: ignore[method-assign]
    t0 = time.monotonic()
    _poisson_client(client, 0, jobs)
    assert taken == ["j0"] and jobs.qsize() == 2
    assert time.monotonic() - t0 < 1.0


def _silent() -> Any:
    """A socket that accepts connections and never speaks gRPC: every request hangs."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_arrivals_no_client_started_are_counted_never_served() -> None:
    """One client, its first request hanging: 3 more arrivals wait (the bound), the rest are
    dropped; the 3 still waiting at the end are unserved, the hanging one lost."""
    with _silent() as silent:
        load = LoadSpec(1, 1, "poisson", 40.0, 1.0, 0.5, MIX, 8, 4, "ngram", 3, max_queued=3)
        access = ServerAccess(f"127.0.0.1:{silent.getsockname()[1]}")
        outcome = LoadRun(load, access, ((1, 2, 3),), 64, say=lambda _: None,
                          run_tag="abcd0123").run()  # fmt: skip
    assert outcome.num_started == 1 and [r for r, _ in outcome.lost] == ["abcd0123.w0.0.0"]
    assert outcome.num_unserved == 3
    assert [n.request_id for n in outcome.never_served if not n.dropped] == [
        f"abcd0123.w0.0.{n}" for n in (1, 2, 3)
    ]
    assert outcome.num_dropped >= 10  # 40 expected in all
    assert outcome.num_arrived == 1 + 3 + outcome.num_dropped
    assert {n.slo_class for n in outcome.never_served} == {"a", "b"}
    assert all(n.target_tokens_per_s == (5.0 if n.slo_class == "b" else None)
               for n in outcome.never_served)  # fmt: skip


def test_a_client_process_that_cannot_start_is_one_line(tmp_path: Any) -> None:
    load = LoadSpec(1, 1, "closed", None, 0.5, 0.5, MIX, 8, 4, "truncated", 0)
    run = LoadRun(load, ServerAccess("127.0.0.1:1"), ((1,),), 64, None,
                  str(tmp_path / "no-draft"), lambda _: None)  # fmt: skip
    with pytest.raises(UserInputError) as err:
        run.run()
    assert str(err.value) == (
        f"client process 0 could not start: model path '{tmp_path / 'no-draft'}' does not exist"
    )
