"""``workload.arrivals_until_s`` bounds a Poisson workload's first arrival too: the first
was scheduled without the check the later ones make (with the window at 0 s, a request
still arrived at 0.77 s; at 1/s and 0.5 s, 129 of 200 seeds' runs had one past it)."""

from __future__ import annotations

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def _num_arrived(seed: int, until_s: float) -> int:
    """Requests that arrived in a 5 s run, finished or not."""
    data = tiny_scenario(duration_s=5.0, seed=seed)
    data["workload"] = {"kind": "poisson", "rate_per_s": 1.0, "arrivals_until_s": until_s}
    run = simulate(scenario_from_dict(data))
    return len(run.requests) + run.unfinished.num_requests


def test_no_request_arrives_after_the_window_not_even_the_first() -> None:
    assert [_num_arrived(seed, 0.0) for seed in range(10)] == [0] * 10
    assert sum(_num_arrived(seed, 5.0) for seed in range(10)) > 20  # ~5 a run
