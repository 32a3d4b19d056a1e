"""The streaming sink counts what a run records: the committed tokens (the committed
goodput) equal the rounds' sum that a recorded run keeps, with round records on or off
(was: ``None`` without them)."""

from __future__ import annotations

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import StreamSink, simulate
from tests.sim.helpers import tiny_scenario


def test_a_streamed_run_that_records_rounds_counts_their_committed_tokens() -> None:
    scenario = scenario_from_dict(tiny_scenario(duration_s=5.0, record_rounds=True))
    kept = simulate(scenario)
    sink = StreamSink()
    run = simulate(scenario, sink=sink)
    metrics = sink.acc.finish(run.duration_s, run.num_servers)
    committed = sum(r.num_committed for r in kept.rounds)
    assert committed > 0 and metrics.num_committed_tokens == committed
    plain = StreamSink()
    unrecorded = simulate(scenario_from_dict(tiny_scenario(duration_s=5.0)), sink=plain)
    finished = plain.acc.finish(unrecorded.duration_s, unrecorded.num_servers)
    assert finished.num_committed_tokens == committed  # counted without the records too
    assert unrecorded.num_committed_tokens == kept.num_committed_tokens == committed
