from __future__ import annotations

import dataclasses
import json

from edgespec.metrics.summary import summarize
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def _metrics_json(overrides: list[str]) -> str:
    result = simulate(scenario_from_dict(tiny_scenario(), overrides))
    metrics = summarize(result.requests, result.batches, result.duration_s, result.num_servers)
    return json.dumps(metrics.to_dict(), sort_keys=True)


def test_same_seed_gives_bit_identical_metrics_json() -> None:
    first = _metrics_json([])
    assert first == _metrics_json([])
    assert json.loads(first)["num_requests"] > 20


def test_different_seed_gives_different_metrics() -> None:
    assert _metrics_json([]) != _metrics_json(["seed=8"])


def test_streamed_metrics_equal_record_metrics() -> None:
    scenario = scenario_from_dict(tiny_scenario())
    kept = simulate(scenario)
    streamed = simulate(scenario, keep_records=False)
    assert streamed.requests == () and streamed.metrics is not None
    metrics = summarize(kept.requests, kept.batches, kept.duration_s, kept.num_servers,
                        unfinished=kept.unfinished)  # fmt: skip
    committed = kept.num_committed_tokens  # no round records: the simulator's count
    assert committed > 0 and streamed.num_committed_tokens == committed
    metrics = dataclasses.replace(
        metrics,
        num_committed_tokens=committed,
        committed_goodput_tokens_per_s=committed / kept.duration_s,
    )
    assert streamed.metrics.to_dict() == metrics.to_dict()
    assert streamed.num_rounds == kept.num_rounds


def test_progress_bar_does_not_change_results() -> None:
    scenario = scenario_from_dict(tiny_scenario(), ["duration_s=5"])
    assert simulate(scenario, progress=True).requests == simulate(scenario).requests
