"""The discrete-event simulator of distributed speculative decoding (DSD-Sim class).

One round of a request: the drafter picks γ (window policy) and drafts γ tokens
(device in ``distributed`` mode, a draft executor on the server in ``fused`` mode, none
in ``centralized`` mode, where γ = 0 and each round is one autoregressive step with
continuous batching); the block travels the uplink (distributed: every round; the other
modes: only the prompt, once); the server queues it, the batching policy groups queued
blocks into one forward pass whose time the cost model gives from the batch shape
(cached prefix vs new tokens, KV cache with LRU eviction); the acceptance model says how
many drafted tokens are accepted, L + 1 tokens are committed; the result travels the
downlink. Routing happens once per request.

Event kinds (lower runs first at equal times): BATCH_END, DELIVER, DRAFT_DONE, ARRIVE,
REQUEST, DISPATCH. The fast path (``scenario.fast_path``) skips DRAFT_DONE (and DELIVER
when the window policy is static and the request goes on), and runs FCFS batching inline
instead of building observations for the policy. It creates the same remaining events
at the same times, and the kernel orders ties by (kind, entity), so its metrics are
identical to the straightforward path's (tests/sim/test_fast_path.py). With a static
window in distributed mode and no round records it also drops the per-round ARRIVE
event: blocks in flight wait in per-server heaps that are moved into the queue exactly
where the queue is read (:mod:`edgespec.sim.inbound`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.metrics.accumulator import MetricsAccumulator
from edgespec.metrics.types import SystemMetrics
from edgespec.sim import build
from edgespec.sim.engine import Engine, RecordSink
from edgespec.sim.kernel import EventQueue
from edgespec.sim.scenario import Scenario


@dataclass(frozen=True, slots=True)
class SimResult:
    """What a run produced. ``requests``/``batches``/``rounds`` are empty when the run
    streamed its records into ``metrics`` instead (``keep_records=False``)."""

    requests: tuple[RequestRecord, ...]
    batches: tuple[BatchRecord, ...]
    num_rounds: int
    duration_s: float
    num_servers: int
    num_events: int
    rounds: tuple[RoundRecord, ...] = ()
    metrics: SystemMetrics | None = None


class _ListSink:
    def __init__(self, keep_rounds: bool) -> None:
        self.requests: list[RequestRecord] = []
        self.batches: list[BatchRecord] = []
        self.rounds: list[RoundRecord] | None = [] if keep_rounds else None

    def request(self, record: RequestRecord) -> None:
        self.requests.append(record)

    def batch(self, record: BatchRecord) -> None:
        self.batches.append(record)

    def round(self, record: RoundRecord) -> None:
        if self.rounds is not None:
            self.rounds.append(record)


class _StreamSink:
    """Aggregates online (memory flat in simulated time)."""

    def __init__(self) -> None:
        self.acc = MetricsAccumulator()
        # The accumulator's bound methods themselves: one call less per record.
        self.request: Callable[[RequestRecord], None] = self.acc.add_request
        self.batch: Callable[[BatchRecord], None] = self.acc.add_batch

    def round(self, record: RoundRecord) -> None:
        pass


def simulate(scenario: Scenario, *, progress: bool = False, keep_records: bool = True) -> SimResult:
    """Run ``scenario`` to ``duration_s`` and return its records (or streamed metrics)."""
    devices, servers = build.build_entities(scenario)
    sink: _ListSink | _StreamSink
    sink = _ListSink(scenario.record_rounds) if keep_records else _StreamSink()
    records: RecordSink = sink
    trace = build.build_trace(scenario)
    engine = Engine(
        scenario,
        devices,
        servers,
        build.build_policies(scenario),
        build.build_acceptance(scenario, trace),
        build.build_lengths(scenario),
        trace,
        records,
        record_rounds=scenario.record_rounds and keep_records,
    )
    queue = EventQueue()
    engine.start(queue)
    # The event loop allocates millions of short-lived tuples and records but creates no
    # garbage cycles (a device and its session point at each other only while the session
    # runs), so the cyclic collector's passes are pure overhead during the run: off, and
    # restored afterwards. Results do not depend on it; memory stays flat
    # (docs/PERFORMANCE.md).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if progress:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                task = bar.add_task(f"simulating {scenario.name}", total=scenario.duration_s)
                queue.run(
                    engine.handlers(),
                    scenario.duration_s,
                    lambda t: bar.update(task, completed=t),
                )
        else:
            queue.run(engine.handlers(), scenario.duration_s)
    finally:
        if collecting:
            gc.enable()
    if isinstance(sink, _ListSink):
        return SimResult(
            requests=tuple(sink.requests),
            batches=tuple(sink.batches),
            num_rounds=engine.num_rounds,
            duration_s=scenario.duration_s,
            num_servers=len(servers),
            num_events=queue.num_events,
            rounds=tuple(sink.rounds or ()),
        )
    return SimResult(
        requests=(),
        batches=(),
        num_rounds=engine.num_rounds,
        duration_s=scenario.duration_s,
        num_servers=len(servers),
        num_events=queue.num_events,
        metrics=sink.acc.finish(scenario.duration_s, len(servers)),
    )
