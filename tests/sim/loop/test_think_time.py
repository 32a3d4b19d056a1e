"""A closed-loop device's think time: exponential, or DSD-Sim's lognormal (mean, cv, floor);
and arrivals that stop before the run ends (a drain)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgespec.config import ConfigError
from edgespec.sim.loop.arrivals import think_time_s
from edgespec.sim.setup.scenario import WorkloadConfig, scenario_from_dict
from tests.sim.helpers import tiny_scenario


def _draws(workload: WorkloadConfig, n: int = 40_000) -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.array([think_time_s(workload, rng) for _ in range(n)])


def test_lognormal_has_the_asked_mean_and_cv_and_floor() -> None:
    """DSD-Sim's shipped model: mean 1.7 s, cv 0.6, at least 0.22 s. Without the floor the
    sample mean and cv are within 3 standard errors of the asked ones; with it no draw is
    below 0.22 s and the share raised to it is the lognormal CDF at 0.22 s."""
    free = WorkloadConfig(think_time_s=1.7, think_distribution="lognormal", think_cv=0.6)
    x = _draws(free)
    assert abs(x.mean() - 1.7) < 3 * 1.7 * 0.6 / math.sqrt(len(x))
    assert x.std() / x.mean() == pytest.approx(0.6, abs=0.03)
    floored = _draws(WorkloadConfig(
        think_time_s=1.7, think_distribution="lognormal", think_cv=0.6, think_min_s=0.22
    ))  # fmt: skip
    assert floored.min() == 0.22
    sigma = math.sqrt(math.log1p(0.36))
    mu = math.log(1.7) - sigma * sigma / 2
    cdf = 0.5 * (1 + math.erf((math.log(0.22) - mu) / (sigma * math.sqrt(2))))
    share = float((floored == 0.22).mean())
    assert abs(share - cdf) < 4 * math.sqrt(cdf * (1 - cdf) / len(floored))


def test_exponential_is_unchanged_and_zero_mean_is_the_floor() -> None:
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    assert think_time_s(WorkloadConfig(think_time_s=2.0), rng_a) == float(rng_b.exponential(2.0))
    assert think_time_s(WorkloadConfig(think_min_s=0.5), rng_a) == 0.5


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("think_cv", 0.0, "must be a finite number > 0, got 0.0"),
        ("think_min_s", -1.0, "must be a finite number >= 0, got -1.0"),
    ],
)
def test_bad_think_settings_name_their_key(key: str, value: float, message: str) -> None:
    data = tiny_scenario()
    data["workload"] = {**data.get("workload", {}), key: value}
    with pytest.raises(ConfigError, match=f"workload.{key}.*{message}"):
        scenario_from_dict(data)


@pytest.mark.parametrize("kind", ["closed_loop", "poisson"])
def test_no_request_arrives_after_arrivals_until_and_the_rest_drain(kind: str) -> None:
    """Arrivals stop at ``arrivals_until_s``; the run goes on to ``duration_s`` and the
    requests then in flight finish after it."""
    from edgespec.sim.simulator import simulate

    data = tiny_scenario(duration_s=30.0)
    load = {"rate_per_s": 2.0} if kind == "poisson" else {"think_time_s": 0.5}
    data["workload"] = {**data["workload"], "kind": kind, "think_time_s": 0.0,
                        "arrivals_until_s": 5.0, **load}  # fmt: skip
    result = simulate(scenario_from_dict(data))
    arrivals = [r.arrival_s for r in result.requests]
    assert arrivals and max(arrivals) <= 5.0
    assert max(r.finish_s for r in result.requests) > 5.0
    whole = simulate(scenario_from_dict(tiny_scenario(duration_s=30.0) | {"workload": {
        **data["workload"], "arrivals_until_s": None}}))  # fmt: skip
    assert max(r.arrival_s for r in whole.requests) > 5.0
