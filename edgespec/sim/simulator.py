"""The discrete-event simulator of distributed speculative decoding (DSD-Sim class).

One round of a request: the window policy picks γ and the mode and the drafter drafts γ
tokens (the device in a distributed round; the server's co-located draft, on the engine
that verifies, in a fused round, :mod:`edgespec.sim.loop.fused`; none in ``centralized``
mode, where γ = 0 and each round is one autoregressive step with continuous batching);
the block travels the uplink (every distributed round; a fused run sends only a header,
with the prompt on the first round; centralized mode only the prompt, once); the server
queues it, the batching policy groups queued blocks into one forward pass whose time the
cost model gives from the batch shape (cached prefix vs new tokens, KV cache with LRU
eviction; plus the co-located draft's passes for fused rounds); the acceptance model says
how many drafted tokens are accepted, L + 1 tokens are committed; the result travels the
downlink. Routing happens once per request.

:func:`simulate` builds the run's parts once (:func:`edgespec.sim.setup.build.build_run`),
holds them in a :class:`~edgespec.sim.state.SimState`, and runs the handler set
:func:`~edgespec.sim.handler_sets.choose_handler_set` picks: the reference round of
:mod:`edgespec.sim.loop` (``fast_path: false``), or a specialisation of it with identical
records (:mod:`edgespec.sim.fast`).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.core.unfinished import UnfinishedCount
from edgespec.metrics.accumulator import SIM_BUSY_KEEP, MetricsAccumulator
from edgespec.metrics.types import SystemMetrics
from edgespec.policies.fusing import fusing
from edgespec.sim.handler_sets import build_loop, choose_handler_set
from edgespec.sim.kernel import EventQueue, Handler, RecordSink
from edgespec.sim.model.unfinished import unfinished_count
from edgespec.sim.setup.build import Policies, build_run
from edgespec.sim.setup.resolve import resolve
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.sources import num_arrivals_after
from edgespec.sim.state import SimState
from edgespec.sweeps.progress import progress_bar

NONE_UNFINISHED = UnfinishedCount(0)
"""A run's count when nothing was left unfinished (an immutable default)."""


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
    """Which handler set ran, and why (:func:`~edgespec.sim.handler_sets.choose_handler_set`)."""
    num_late_arrivals: int = 0
    """The trace workload's requests that arrive after ``duration_s``: not simulated."""
    num_committed_tokens: int = 0
    """Tokens committed by every round verified inside the run, finished request or not
    (Σ ``RoundRecord.num_committed`` of its rounds, recorded or not: every handler set
    counts them)."""
    unfinished: UnfinishedCount = NONE_UNFINISHED
    """Requests that arrived inside the run and had not finished at its end: running on
    their device, or waiting for it
    (:func:`~edgespec.sim.model.unfinished.unfinished_count`)."""

    @property
    def num_unfinished_requests(self) -> int:
        return self.unfinished.num_requests


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

    def committed(self, num_tokens: int) -> None:
        """Kept in :attr:`SimResult.num_committed_tokens` instead."""

    def unfinished(self, count: UnfinishedCount) -> None:
        """Kept in :attr:`SimResult.unfinished` instead."""


class StreamSink:
    """Aggregates online (memory flat in simulated time)."""

    def __init__(self) -> None:
        self.acc = MetricsAccumulator(SIM_BUSY_KEEP)
        # The accumulator's bound methods themselves: one call less per record.
        self.request: Callable[[RequestRecord], None] = self.acc.add_request
        self.batch: Callable[[BatchRecord], None] = self.acc.add_batch
        self.committed: Callable[[int], None] = self.acc.add_committed
        self.unfinished: Callable[[UnfinishedCount], None] = self.acc.add_unfinished

    def round(self, record: RoundRecord) -> None:
        """Rounds come only from a run that records them; they give the committed goodput,
        which a run without them gives :attr:`committed` at its end (a method, not a
        bound attribute: a subclass may see the rounds too)."""
        self.acc.add_round(record)


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

    def committed(self, num_tokens: int) -> None:
        self.sink.committed(num_tokens)

    def unfinished(self, count: UnfinishedCount) -> None:
        self.sink.unfinished(count)


def simulate(
    scenario: Scenario,
    *,
    policies: Policies | None = None,
    sink: RecordSink | None = None,
    progress: bool = False,
    keep_records: bool = True,
    cells: Sequence[int] | None = None,
    handlers: str | None = None,
) -> SimResult:
    """Run ``scenario`` to ``duration_s`` and return its records (or streamed metrics).

    ``policies``: the policy instances to run (with their weights); default: the
    scenario's policies built from their registry names. ``sink``: where every record
    goes as it is produced (the result then holds none and no metrics). No process-wide
    state is touched: a caller that owns its process may pause the cyclic garbage
    collector around the run (:func:`paused_gc`, as the CLI does).

    ``cells``: run only these cells of a pinned scenario (a shard, :mod:`edgespec.sim.setup.cells`);
    its records carry the whole scenario's server ids and client ids. ``handlers``: run
    this handler set by name (:data:`~edgespec.sim.handler_sets.HANDLER_SETS`; refused
    when it cannot run the scenario exactly); default: the one the scenario gets.
    """
    collected: _ListSink | StreamSink | None = None
    if sink is None:
        collected = _ListSink(scenario.record_rounds) if keep_records else StreamSink()
        sink = collected
    record_rounds = scenario.record_rounds and (keep_records or collected is None)
    state = build_state(scenario, sink, policies=policies, cells=cells, record_rounds=record_rounds)
    choice = choose_handler_set(state, handlers)
    loop = build_loop(state, choice)
    loop.arrivals.start(state.q)
    _run_events(state.q, loop.handlers(), scenario, progress)
    unfinished = _tell_the_end(state, record_rounds)
    done = SimResult(
        (),
        (),
        state.num_rounds,
        scenario.duration_s,
        len(state.servers),
        state.q.num_events,
        path=choice.description,
        num_late_arrivals=num_arrivals_after(state.trace, scenario.duration_s),
        num_committed_tokens=state.num_committed_tokens,
        unfinished=unfinished,
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
        return replace(done, metrics=collected.acc.finish(scenario.duration_s, len(state.servers)))
    return done


def _tell_the_end(state: SimState, record_rounds: bool) -> UnfinishedCount:
    """Give the sink the run's end counts: the committed tokens when it saw no round
    records (else 0 more: it counted every round's record, none if none was verified),
    and the requests unfinished (returned)."""
    state.sink.committed(0 if record_rounds else state.num_committed_tokens)
    scenario = state.scenario
    unfinished = unfinished_count(state.devices, scenario.slo_classes, scenario.duration_s)
    state.sink.unfinished(unfinished)
    return unfinished


def _run_events(
    queue: EventQueue, handlers: list[Handler], scenario: Scenario, progress: bool
) -> None:
    """Drain the event queue to ``duration_s``, with progress on stderr when asked, in
    whole simulated seconds (:func:`~edgespec.sweeps.progress.progress_bar`: a bar on a
    terminal, lines in a log file; stdout keeps the table)."""
    if not progress:
        queue.run(handlers, scenario.duration_s)
        return
    total_s = max(1, math.ceil(scenario.duration_s))
    with progress_bar(True, transient=True) as bar:
        task = bar.add_task(f"simulating {scenario.name} (simulated s)", total=total_s)
        queue.run(handlers, scenario.duration_s,
                  lambda t: bar.update(task, completed=min(total_s, int(t))))  # fmt: skip
        bar.update(task, completed=total_s)  # drained: the last event may come before the end


def build_state(
    scenario: Scenario,
    sink: RecordSink,
    *,
    policies: Policies | None = None,
    cells: Sequence[int] | None = None,
    record_rounds: bool | None = None,
) -> SimState:
    """The run's parts, resolved whole (:func:`edgespec.sim.setup.resolve.resolve`; with
    brought ``policies``, co-located drafts where their window may fuse) and then built in
    one pass (:func:`edgespec.sim.setup.build.build_run`), in a :class:`SimState`
    (``record_rounds``: default the scenario's)."""
    colocated = None
    if policies is not None:
        colocated = fusing(policies.window, scenario.mode) is not False
    run = build_run(resolve(scenario, colocated=colocated), policies, cells)
    if run.layout.is_shard:
        sink = _GlobalIds(sink, run.layout.server_global)
    return SimState(
        scenario,
        run.devices,
        run.servers,
        run.policies,
        run.acceptance,
        run.lengths,
        run.trace,
        sink,
        record_rounds=scenario.record_rounds if record_rounds is None else record_rounds,
        stop=run.stop,
        layout=run.layout,
    )


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
