from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from tests.sim.helpers import tiny_scenario


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=5.0)))
    return path


def test_sim_writes_a_run_folder(
    scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["sim", str(scenario_file), "seed=3", "--out", str(out), "--quiet", "--verbose"]
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["num_requests"] > 0
    assert (out / "requests.csv").read_text().count("\n") == metrics["num_requests"] + 1
    assert yaml.safe_load((out / "scenario.yaml").read_text())["seed"] == 3
    printed = capsys.readouterr().out
    assert "rounds" in printed and "handler set: fast (inlined: " in printed


def test_sim_bad_override_names_the_field(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", str(scenario_file), "links.wan.rtt_ms=-5", "--quiet"]) == 2
    assert (
        "config field 'links.wan.rtt_ms': must be a finite number >= 0, got -5.0"
        in capsys.readouterr().err
    )


def test_sim_sweep_runs_each_point(scenario_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["sim", str(scenario_file), "--sweep", "seed=1,2", "--out", str(out), "--quiet"]
    assert main(args) == 0
    points = json.loads((out / "sweep.json").read_text())
    assert [p["overrides"] for p in points] == [{"seed": 1}, {"seed": 2}]


def test_sim_sweep_given_twice_sweeps_both(scenario_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["sim", str(scenario_file), "--sweep", "seed=1,2", "--sweep", "duration_s=5",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert main(args) == 0
    points = json.loads((out / "sweep.json").read_text())
    assert [p["overrides"] for p in points] == [
        {"seed": 1, "duration_s": 5},
        {"seed": 2, "duration_s": 5},
    ]


def test_sim_sweep_of_one_key_twice_is_refused(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sim", str(scenario_file), "--sweep", "seed=1,2", "--sweep", "seed=3", "--quiet"]
    assert main(args) == 2
    assert "config field 'seed': swept twice" in capsys.readouterr().err


def test_bench_sim_reports_rounds_per_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "bench.json"
    args = ["bench", "sim", "duration_s=3", "workload.prompt_tokens=[50]",
            "workload.output_tokens=[40]", "--json", str(report)]  # fmt: skip
    assert main(args) == 0
    data = json.loads(report.read_text())
    assert data["num_devices"] == 1000 and data["num_servers"] == 20
    assert data["num_rounds"] > 1000 and data["rounds_per_s"] > 0


def test_bench_sim_repeat_and_check(tmp_path: Path) -> None:
    """--repeat reports the least-CPU run; --check compares with the straightforward path."""
    report = tmp_path / "bench.json"
    args = ["bench", "sim", "duration_s=1", "--repeat", "2", "--check", "--json", str(report)]
    assert main(args) == 0
    data = json.loads(report.read_text())
    assert data["repeats"] == 2 and data["identical_to_other_path"] is True
    assert data["rounds_per_cpu_s"] >= data["median_rounds_per_cpu_s"] > 0


def test_sim_capacity_search_writes_capacity_json(scenario_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "cap"
    key = "auto_topology.devices.0.count"
    args = ["sim", str(scenario_file), "duration_s=20", "--capacity", key,
            "--lo", "4", "--hi", "8", "--epsilon", "1.0", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(args) == 0
    result = json.loads((out / "capacity.json").read_text())
    assert result["capacity"] == 8 and result["at_upper_bound"] is True
    assert [p["value"] for p in result["probes"]] == [4, 8]


def test_sim_capacity_of_one_slo_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two classes on one device pool: the loose one never violates, the tight one always
    does, so only the class named by --slo-class decides the capacity."""
    data = tiny_scenario(duration_s=20.0)
    data["slo_classes"] = {"loose": 0.001, "tight": 1e6}
    data["auto_topology"]["devices"][0]["slo_mix"] = {"loose": 1, "tight": 1}
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(data))
    key = "auto_topology.devices.0.count"
    base = ["sim", str(path), "--capacity", key, "--lo", "2", "--hi", "6", "--quiet"]
    assert main([*base, "--slo-class", "loose", "--out", str(tmp_path / "a")]) == 0
    assert json.loads((tmp_path / "a" / "capacity.json").read_text())["capacity"] == 6
    assert "for class loose: 6 (at upper bound)" in " ".join(capsys.readouterr().out.split())
    assert main([*base, "--slo-class", "tight", "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "capacity.json").read_text())["capacity"] is None
    assert main([*base, "--slo-class", "gold"]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: --slo-class gold: the scenario has no such SLO class; "
        "known: ['loose', 'tight']\n"
    )


def test_bench_policy_times_every_batching_policy(tmp_path: Path) -> None:
    from edgespec.policies.registry import BATCHING

    report = tmp_path / "policy.json"
    assert main(["bench", "policy", "--json", str(report)]) == 0
    rows = json.loads(report.read_text())
    assert {(r["policy"], r["queue_depth"]) for r in rows} == {
        (name, depth) for name in BATCHING for depth in (10, 100, 1000)
    }
    assert all(r["us_per_decision"] > 0 for r in rows)


def test_sim_capacity_counting_the_sure_misses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--count-sure-misses: each probe's rate is that of its finished requests and its
    unfinished ones already sure to miss (the rest left out), not Eq. 20's, over every class
    or (--slo-class) one; the rerun command keeps the flag."""
    data = tiny_scenario(duration_s=8.0)
    data["workload"] = {"kind": "closed_loop", "think_time_s": 0.0, "prompt_tokens": [40, 300],
                        "output_tokens": [30, 120]}  # fmt: skip
    data["slo_classes"] = {"slow": 2.0, "fast": 12.0}  # queued fast requests: sure to miss
    path = tmp_path / "queued.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "cap"
    key = "auto_topology.devices.0.count"
    base = ["sim", str(path), "--capacity", key, "--lo", "2", "--hi", "32", "--quiet"]
    assert main([*base, "--epsilon", "1.0", "--count-sure-misses", "--out", str(out)]) == 0
    result = json.loads((out / "capacity.json").read_text())
    differs = 0
    for probe in result["probes"]:
        m = probe["metrics"]
        with_target = sum(c["num_with_target"] for c in m["slo_classes"])
        met = sum(c["num_met"] for c in m["slo_classes"])
        missed = m["num_unfinished_missed"]
        assert probe["violation_rate"] == pytest.approx(
            (with_target - met + missed) / (with_target + missed)
        )
        differs += probe["violation_rate"] != pytest.approx(m["slo_violation_rate"])
    assert [p["value"] for p in result["probes"]] == [2, 32] and differs
    command = json.loads((out / "command.json").read_text())["command"]
    assert command[-1] == "--count-sure-misses"
    said = " ".join(capsys.readouterr().out.split())
    assert "counting the unfinished requests sure to miss: 32 (at upper bound)" in said
    # the rates the search compared with ε, beside the table's overall ones
    from edgespec.metrics.formatting import percent

    rates = ", ".join(f"{p['value']} → {percent(p['violation_rate'])}" for p in result["probes"])
    assert (
        f"violation searched (compared with epsilon; SLO violation above is every class's): {rates}"
        in said
    )
    one = tmp_path / "one"
    flags = ["--epsilon", "1.0", "--count-sure-misses", "--slo-class", "fast", "--out", str(one)]
    assert main([*base, *flags]) == 0
    differs = 0
    for probe in json.loads((one / "capacity.json").read_text())["probes"]:
        (fast,) = [c for c in probe["metrics"]["slo_classes"] if c["slo_class"] == "fast"]
        missed, finished = fast["num_unfinished_missed"], fast["num_with_target"]
        assert probe["violation_rate"] == pytest.approx(
            (finished - fast["num_met"] + missed) / (finished + missed)
        )
        differs += probe["violation_rate"] != pytest.approx(1 - fast["num_met"] / finished)
    assert differs  # at 32 devices: unfinished fast requests sure to miss
    command = json.loads((one / "command.json").read_text())["command"]
    assert command[-3:] == ["--slo-class", "fast", "--count-sure-misses"]
