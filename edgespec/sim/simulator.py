"""The discrete-event simulator of distributed speculative decoding (DSD-Sim class).

One round of a request: the window policy picks γ and the mode and the drafter drafts γ
tokens (the device in a distributed round; the server's co-located draft, on the engine
that verifies, in a fused round, :mod:`edgespec.sim.fused_run`; none in ``centralized``
mode, where γ = 0 and each round is one autoregressive step with continuous batching);
the block travels the uplink (every distributed round; a fused run sends only a header,
with the prompt on the first round; centralized mode only the prompt, once); the server
queues it, the batching policy groups queued blocks into one forward pass whose time the
cost model gives from the batch shape (cached prefix vs new tokens, KV cache with LRU
eviction; plus the co-located draft's passes for fused rounds); the acceptance model says
how many drafted tokens are accepted, L + 1 tokens are committed; the result travels the
downlink. Routing happens once per request.

Event kinds (lower runs first at equal times): BATCH_END, DELIVER, DRAFT_DONE, ARRIVE,
REQUEST, DISPATCH. Both paths draw the uplink when a round begins (no DRAFT_DONE event)
and begin a continuing request's next round at its BATCH_END (DELIVER only for finished
requests; ``Simulation.every_hop`` restores both events, for tests). The fast path
(``scenario.fast_path``) also runs FCFS batching inline instead of building the policy's
inputs. It creates the same remaining events
at the same times, and the kernel orders ties by (kind, entity), so its metrics are
identical to the straightforward path's (tests/sim/test_fast_path.py). With a static
window in distributed mode and no round records it also drops the per-round ARRIVE
event: blocks in flight wait in per-server heaps that are moved into the queue exactly
where the queue is read (:mod:`edgespec.sim.inbound`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.metrics.accumulator import SIM_BUSY_KEEP, MetricsAccumulator
from edgespec.metrics.types import SystemMetrics
from edgespec.sim import build
from edgespec.sim.build import Policies
from edgespec.sim.engine import Simulation
from edgespec.sim.fused_run import fusing
from edgespec.sim.kernel import EventQueue, RecordSink
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
    path: str = ""
    """Which event-loop path ran, and why (fast, or straightforward with the reason)."""


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


class StreamSink:
    """Aggregates online (memory flat in simulated time)."""

    def __init__(self) -> None:
        self.acc = MetricsAccumulator(SIM_BUSY_KEEP)
        # The accumulator's bound methods themselves: one call less per record.
        self.request: Callable[[RequestRecord], None] = self.acc.add_request
        self.batch: Callable[[BatchRecord], None] = self.acc.add_batch

    def round(self, record: RoundRecord) -> None:
        pass


class _GlobalIds:
    """A shard's records with the whole scenario's server ids (``server_global``)."""

    def __init__(self, sink: RecordSink, server_global: tuple[int, ...]) -> None:
        self.sink = sink
        self.server_global = server_global

    def request(self, record: RequestRecord) -> None:
        self.sink.request(replace(record, server_id=self.server_global[record.server_id]))

    def batch(self, record: BatchRecord) -> None:
        self.sink.batch(replace(record, server_id=self.server_global[record.server_id]))

    def round(self, record: RoundRecord) -> None:
        self.sink.round(replace(record, server_id=self.server_global[record.server_id]))


def simulate(
    scenario: Scenario,
    *,
    policies: Policies | None = None,
    sink: RecordSink | None = None,
    progress: bool = False,
    keep_records: bool = True,
    cells: Sequence[int] | None = None,
) -> SimResult:
    """Run ``scenario`` to ``duration_s`` and return its records (or streamed metrics).

    ``policies``: the policy instances to run (with their weights); default: the
    scenario's policies built from their registry names. ``sink``: where every record
    goes as it is produced (the result then holds none and no metrics). No process-wide
    state is touched: a caller that owns its process may pause the cyclic garbage
    collector around the run (:func:`paused_gc`, as the CLI does).

    ``cells``: run only these cells of a pinned scenario (a shard, :mod:`edgespec.sim.cells`);
    its records carry the whole scenario's server ids and client ids.
    """
    chosen = policies if policies is not None else build.build_policies(scenario)
    colocated = fusing(chosen.window, scenario.mode) is not False  # fused rounds possible
    devices, servers, layout = build.build_fleet(scenario, cells, colocated)
    collected: _ListSink | StreamSink | None = None
    if sink is None:
        collected = _ListSink(scenario.record_rounds) if keep_records else StreamSink()
        sink = collected
    if layout.is_shard:
        sink = _GlobalIds(sink, layout.server_global)
    trace = build.build_trace(scenario)
    acceptance = build.build_acceptance(scenario, trace)
    engine = Simulation(
        scenario,
        devices,
        servers,
        chosen,
        acceptance,
        build.build_lengths(scenario),
        trace,
        sink,
        record_rounds=scenario.record_rounds and (keep_records or collected is None),
        stop=build.build_stop_model(scenario, chosen, trace, acceptance),
        layout=layout,
    )
    queue = EventQueue()
    engine.start(queue)
    if progress:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task(f"simulating {scenario.name}", total=scenario.duration_s)
            queue.run(
                engine.handlers(), scenario.duration_s, lambda t: bar.update(task, completed=t)
            )
    else:
        queue.run(engine.handlers(), scenario.duration_s)
    done = SimResult(
        (),
        (),
        engine.num_rounds,
        scenario.duration_s,
        len(servers),
        queue.num_events,
        path=engine.path,
    )
    if isinstance(collected, _ListSink):
        rounds = tuple(collected.rounds or ())
        return replace(
            done,
            requests=tuple(collected.requests),
            batches=tuple(collected.batches),
            rounds=rounds,
        )
    if isinstance(collected, StreamSink):
        return replace(done, metrics=collected.acc.finish(scenario.duration_s, len(servers)))
    return done


def run_scenario(scenario: Scenario, policies: Policies | None = None) -> SystemMetrics:
    """The scenario's metrics (records streamed, not kept): the pure scenario → metrics
    function that sweeps, capacity searches and executors call."""
    metrics = simulate(scenario, policies=policies, keep_records=False).metrics
    assert metrics is not None
    return metrics


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the block, restored afterwards.

    The event loop allocates millions of short-lived tuples and records but creates no
    garbage cycles (a device and its session point at each other only while the session
    runs), so the collector's passes are pure overhead during a run. This is a
    process-wide switch: only a caller that owns its process (the CLI) uses it.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
