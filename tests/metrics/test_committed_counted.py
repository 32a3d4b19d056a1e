"""The simulator counts the committed goodput (WISP Table 3) in every run, round records
or not (was: ``null`` unless the run recorded its rounds, so every sweep point, capacity
probe and ``edgespec sim`` without ``--rounds`` had none, though docs/METRICS.md said
``edgespec sim`` counted it): the count equals the sum over the rounds a recorded run
keeps, through ``run_scenario`` (what a sweep point and a capacity probe run), a sharded
run and the ``edgespec sim`` command."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import apply_overrides
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.shards import simulate_sharded
from edgespec.sim.simulator import StreamSink, run_scenario, simulate
from edgespec.sweeps.executor import SerialExecutor
from tests.sim.helpers import tiny_scenario
from tests.sim.test_shards import pinned


def _recorded_sum(data: dict[str, Any]) -> int:
    kept = simulate(scenario_from_dict(data, ["record_rounds=true"]))
    return sum(r.num_committed for r in kept.rounds)


@pytest.mark.parametrize(
    "overrides",
    [[], ["fast_path=false"], ["mode=fused"], ["policies.window.name=awc"]],
    ids=["fast", "reference", "fused", "awc"],
)
def test_a_run_without_round_records_counts_what_the_rounds_sum_to(
    overrides: list[str],
) -> None:
    data = apply_overrides(tiny_scenario(duration_s=5.0), overrides)
    metrics = run_scenario(scenario_from_dict(data))
    expected = _recorded_sum(data)
    assert expected > 0 and metrics.num_committed_tokens == expected
    assert metrics.committed_goodput_tokens_per_s == expected / 5.0


def test_a_sharded_run_counts_them_too() -> None:
    data = pinned()
    sharded = simulate_sharded(data, 2, SerialExecutor())
    assert sharded.metrics.num_committed_tokens == _recorded_sum(pinned())


def test_edgespec_sim_without_rounds_and_a_sweep_report_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(json.dumps(tiny_scenario(duration_s=3.0)))
    plain, recorded = tmp_path / "plain", tmp_path / "recorded"
    quiet = ["--quiet", "--no-plots"]
    assert main(["sim", str(scenario), "--out", str(plain), *quiet]) == 0
    assert main(["sim", str(scenario), "--rounds", "--out", str(recorded), *quiet]) == 0
    found = json.loads((plain / "metrics.json").read_text())
    kept = json.loads((recorded / "metrics.json").read_text())
    assert found["num_committed_tokens"] == kept["num_committed_tokens"] > 0
    assert found["committed_goodput_tokens_per_s"] == kept["num_committed_tokens"] / 3.0
    swept = tmp_path / "swept"
    args = ["sim", str(scenario), "--sweep", "seed=7,8", "--out", str(swept), "--quiet"]
    assert main(args) == 0
    with (swept / "sweep.csv").open(newline="") as rows:
        committed = {row["seed"]: row["num_committed_tokens"] for row in csv.DictReader(rows)}
    assert committed["7"] == str(kept["num_committed_tokens"])
    assert committed["8"] not in ("", "None")
    capsys.readouterr()


@pytest.mark.parametrize("rounds", [["--rounds"], []], ids=["rounds", "no-rounds"])
def test_a_run_that_verified_no_round_counts_zero_committed(
    tmp_path: Path, rounds: list[str]
) -> None:
    """0, not null, with round records too (was null: none was there to count)."""
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(json.dumps(tiny_scenario(duration_s=0.001)))
    out = tmp_path / "run"
    assert main(["sim", str(scenario), "--out", str(out), "--quiet", "--no-plots", *rounds]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["num_batches"] == 0
    assert (metrics["num_committed_tokens"], metrics["committed_goodput_tokens_per_s"]) == (0, 0)
    sink = StreamSink()
    run = simulate(
        scenario_from_dict(tiny_scenario(duration_s=0.001, record_rounds=True)), sink=sink
    )
    assert sink.acc.finish(run.duration_s, run.num_servers).num_committed_tokens == 0
