"""``edgespec sim`` on a drafting-server scenario: the bundled one by name, overrides, the
run folder, and the flags it does not take."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main

FAST = ["pipeline.num_users=5", "pipeline.max_output_tokens=100", "pipeline.planner.max_spec_len=2"]


def test_the_bundled_scenario_runs_and_writes_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["sim", "zhu-pipeline", *FAST, "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("zhu-pipeline: 5 users, tinyllama-1.1b drafting on the SBS")
    assert "T_inf analytic" in printed and f"→ {out}" in printed
    record = json.loads((out / "pipeline.json").read_text())
    analytic, simulated = record["analytic"], record["simulated"]
    assert simulated["makespan_s"] == pytest.approx(analytic["total_s"], rel=1e-9)
    assert len(record["tasks"]) == 5 and record["plan"]["spec_len"] in (1, 2)
    ran = yaml.safe_load((out / "scenario.yaml").read_text())
    assert ran["pipeline"]["num_users"] == 5  # the overrides applied


def test_a_file_that_says_its_system_is_a_drafting_server_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.yaml"
    data = {"name": "mine", "system": "drafting_server", "pipeline": {"num_users": 3}}
    path.write_text(yaml.safe_dump(data))
    args = ["sim", str(path), "pipeline.max_output_tokens=50", "--out", str(tmp_path / "o")]
    assert main([*args, "pipeline.verifier.policy.name=fcfs"]) == 0
    assert "batching policy 'fcfs'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rounds"], "--rounds does not apply to a drafting-server scenario"),
        (["--sweep", "seed=1,2"], "--sweep does not apply to a drafting-server scenario"),
        (["--verbose"], "--verbose does not apply to a drafting-server scenario"),
    ],
)
def test_flags_it_does_not_take_are_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", "zhu-pipeline", *flags, "--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_override_names_its_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "zhu-pipeline", "pipeline.alpha=2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "config field 'pipeline.alpha': must be in [0, 1], got 2.0" in err


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (  # a traceback (ValueError) from the latency model
            "pipeline.cell.path_loss_db=-400",
            "config field 'pipeline.cell': user 0's spectral efficiency log2(1 + p·g/σ²) is 0 "
            "at this cell's tx_power_w, path_loss_db and noise_dbm: its upload would never end",
        ),
        (  # an OverflowError traceback placing the users
            "pipeline.cell.radius_m=1e300",
            "config field 'pipeline.cell': WirelessCell: radius_m must be <= 1e+07, got 1e+300",
        ),
        (  # "cannot convert float NaN to integer"
            "pipeline.sbs_memory_gb=1e300",
            "config field 'pipeline.sbs_memory_gb': must be in (0, 1e+06], got 1e+300",
        ),
        (  # T_com inf s, the simulated T_inf nan
            "pipeline.cell.bandwidth_hz=1e-300",
            "config field 'pipeline.cell': WirelessCell: bandwidth_hz must be >= 1, got 1e-300",
        ),
    ],
)
def test_a_cell_or_memory_out_of_reach_is_one_line(
    override: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", "zhu-pipeline", override, "--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_its_folder_is_claimed_before_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["sim", "zhu-pipeline", *FAST, "--quiet", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["sim", "zhu-pipeline", *FAST, "--quiet", "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(
        f"edgespec sim: --out {out} already holds a run (pipeline.json, scenario.yaml); "
    )
    assert main(["sim", "zhu-pipeline", *FAST, "--quiet", "--overwrite", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["pipeline.json", "scenario.yaml"]


@pytest.mark.parametrize("quiet", [False, True])
def test_planning_and_simulating_show_a_bar_unless_quiet(
    quiet: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bar of the sim command's other long runs (its shards'): a step per speculation
    length planned (2 here), then one per simulation."""
    bars: list[tuple[str, list[tuple[int, int]]]] = []

    def lazy_bar(stack: Any, label: str) -> Callable[[int, int], None]:
        bars.append((label, []))
        return lambda done, total: bars[-1][1].append((done, total))

    monkeypatch.setattr("edgespec.sim.commands.run.lazy_bar", lazy_bar)
    quieted = ["--quiet"] if quiet else []
    assert main(["sim", "zhu-pipeline", *FAST, *quieted, "--out", str(tmp_path / "r")]) == 0
    steps = [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert bars == ([] if quiet else [("planning, then simulating", steps)])


def test_a_verifier_policy_run_counts_both_simulations() -> None:
    from edgespec.sim.drafting_server.build import run_pipeline
    from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict

    policy = ["pipeline.verifier.policy.name=fcfs", "pipeline.simulation.acceptance=iid"]
    scenario = pipeline_scenario_from_dict({"name": "t", "pipeline": {}}, [*FAST, *policy])
    calls: list[tuple[int, int]] = []
    run = run_pipeline(scenario, lambda *c: calls.append(c))
    assert run.plan_order is not None
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
