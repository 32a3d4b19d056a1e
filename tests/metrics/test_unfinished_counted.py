"""The simulator counts the requests that arrived inside a run and had not finished at its
end (``num_unfinished_requests``: no per-request statistic counts them). The oracle is the
same run drained: its arrivals stopped at the end of the first and run on until every
request finished, its events up to that end are the first run's, so the requests it
finishes beyond the first run's are exactly those left unfinished. In every handler set,
a Poisson fleet whose devices queue arrivals, a sharded run and ``edgespec sim``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import apply_overrides
from edgespec.metrics.accumulator import MetricsAccumulator
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.shards import simulate_sharded
from edgespec.sim.simulator import run_scenario, simulate
from edgespec.sweeps.executor import SerialExecutor
from tests.sim.helpers import tiny_scenario
from tests.sim.test_shards import pinned

END_S = 4.0
DRAINED_S = 400.0

POISSON = {"kind": "poisson", "rate_per_s": 9.0, "prompt_tokens": [40, 300],
           "output_tokens": [30, 120]}  # fmt: skip
"""More arrivals than 12 devices serve at once: busy devices queue theirs."""


def _finished_when_drained(data: dict[str, Any]) -> int:
    """The requests that arrived before ``END_S``, each run to its end."""
    drained = apply_overrides(data, [f"duration_s={DRAINED_S}",
                                     f"workload.arrivals_until_s={END_S}"])  # fmt: skip
    result = simulate(scenario_from_dict(drained))
    return len(result.requests)


@pytest.mark.parametrize(
    "overrides",
    [[], ["fast_path=false"], ["mode=fused"], ["mode=centralized"], ["policies.window.name=awc"]],
    ids=["fast", "reference", "fused", "centralized", "awc"],
)
@pytest.mark.parametrize("workload", ["closed_loop", "poisson"])
def test_the_unfinished_are_those_a_drained_run_finishes_beyond(
    overrides: list[str], workload: str
) -> None:
    data = apply_overrides(tiny_scenario(duration_s=END_S), overrides)
    if workload == "poisson":
        data["workload"] = POISSON
    metrics = run_scenario(scenario_from_dict(data))
    listed = simulate(scenario_from_dict(data))
    unfinished = _finished_when_drained(data) - metrics.num_requests
    assert unfinished > 0 and metrics.num_unfinished_requests == unfinished
    assert listed.num_unfinished_requests == unfinished
    if workload == "poisson":  # more than the 12 devices run: some waited for theirs
        assert unfinished > 12


def test_a_sharded_run_sums_its_shards() -> None:
    data = pinned()
    whole = run_scenario(scenario_from_dict(data))
    sharded = simulate_sharded(data, 2, SerialExecutor())
    assert whole.num_unfinished_requests is not None and whole.num_unfinished_requests > 0
    assert sharded.metrics.num_unfinished_requests == whole.num_unfinished_requests


def test_an_accumulator_counts_them_only_when_told() -> None:
    told = MetricsAccumulator()
    told.add_unfinished(3)
    told.add_unfinished(0)
    merged = MetricsAccumulator()
    merged.merge(told)
    merged.merge(MetricsAccumulator())
    assert merged.finish(1.0, 1).num_unfinished_requests == 3
    assert MetricsAccumulator().finish(1.0, 1).num_unfinished_requests is None
    with pytest.raises(ValueError, match="unfinished requests must be >= 0, got -1"):
        told.add_unfinished(-1)


def test_edgespec_sim_writes_and_prints_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tiny_scenario(duration_s=END_S)
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(json.dumps(data))
    out = tmp_path / "run"
    assert main(["sim", str(scenario), "--out", str(out), "--quiet", "--no-plots"]) == 0
    written = json.loads((out / "metrics.json").read_text())
    unfinished = _finished_when_drained(data) - written["num_requests"]
    assert written["num_unfinished_requests"] == unfinished > 0
    requests_row = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("requests")
    )
    assert requests_row.split(maxsplit=1)[1].rstrip() == (
        f"{written['num_requests']} in 4 s, {unfinished} unfinished at the end"
    )
