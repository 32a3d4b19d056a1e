"""Every SLO class with a target keeps its place in the metrics: one none of whose
requests arrived in the run (a short run, a rare class) vanished from ``metrics.json``,
the summary and a sweep's ``slo_classes.<class>.*`` columns."""

from __future__ import annotations

from edgespec.sim.model.unfinished import unfinished_count
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def test_a_class_none_of_whose_requests_arrived_is_counted_0_of_0() -> None:
    count = unfinished_count([], {"slow": 2.0, "fast": 8.0, "none": None}, 10.0)
    assert [(c.slo_class, c.num_with_target, c.num_missed) for c in count.classes] == [
        ("fast", 0, 0), ("slow", 0, 0),
    ]  # fmt: skip
    assert count.num_requests == 0


def test_a_run_too_short_for_a_class_still_lists_it() -> None:
    data = tiny_scenario(duration_s=0.05)
    data["slo_classes"] = {"slow": 2.0, "fast": 8.0, "rare": 4.0}
    data["auto_topology"]["devices"][0]["slo_mix"] = {"slow": 0.5, "fast": 0.5}
    metrics = simulate(scenario_from_dict(data), keep_records=False).metrics
    assert metrics is not None
    rare = metrics.slo_class("rare")
    assert (rare.target_tokens_per_s, rare.num_requests, rare.attainment) == (4.0, 0, None)
    assert [s.slo_class for s in metrics.slo_classes] == ["fast", "rare", "slow"]
