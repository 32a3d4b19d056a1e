"""A scenario field's error printed by the commands that read a scenario file (``sim``:
plain runs, sweeps; ``bench sim`` on the bundled bench.yaml) starts with ``FILE:LINE:``,
the line of the field's key as the file was read (edgespec.config.locate.located_in, the
lines kept by edgespec.config.read_yaml_file): a key a ``<<`` merge brings at its line in
the anchored mapping, a list item an alias gives at the alias; a missing required key at
its mapping's key; a field an override or a sweep point sets keeps the field alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config.scenario_files import bundled_scenarios_dir
from edgespec.policies.registry import BATCHING, STOP, WINDOW

QUIET = ["--quiet", "--no-plots"]

SCENARIO = """\
name: lines
duration_s: 0.5
links:
  default: {rtt_ms: 5.0, bandwidth_mbps: 30.0}
auto_topology:
  devices:
    - name: orin
      count: 2
      draft_model: qwen3-0.6b
      hardware: jetson-orin
  servers:
    - {count: 1, target_model: qwen3-8b, hardware: a40}
policies:
  batching: {name: fcfs}
  window:
    name: static
    params: {gamma: 3}
workload: {kind: closed_loop, think_time_s: 0.5}
"""


def _sim_error(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[Path, str]:
    """The file ``text`` is written to, and ``edgespec sim``'s one-line error for it."""
    file = tmp_path / "my.yaml"
    file.write_text(text)
    assert main(["sim", str(file), *args, *QUIET, "--out", str(tmp_path / "run")]) == 2
    return file, capsys.readouterr().err


def test_a_bad_value_two_levels_deep_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SCENARIO.replace("    name: static", "    name: nosuch")
    file, err = _sim_error(text, tmp_path, capsys)
    assert err == (
        f"edgespec sim: {file}:16: config field 'policies.window.name': unknown window "
        f"policy 'nosuch'; known: {sorted(WINDOW)}\n"
    )


def test_a_misspelt_key_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file, err = _sim_error(SCENARIO.replace("      count: 2", "      cuont: 2"), tmp_path, capsys)
    assert err == (
        f"edgespec sim: {file}:8: config field 'auto_topology.devices[0].cuont': unknown "
        "field; known: ['cost_model', 'count', 'draft_model', 'hardware', 'link', 'name', "
        "'server_pools', 'slo_mix'] (did you mean 'count'?)\n"
    )


def test_a_missing_required_key_names_its_mappings_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"{SCENARIO}stop_predictor:\n  policy:\n    params: {{threshold: 0.5}}\n"
    file, err = _sim_error(text, tmp_path, capsys)
    assert err == (
        f"edgespec sim: {file}:20: config field 'stop_predictor.policy': name is required: no "
        f"stop policy runs here by default; known: {sorted(STOP)}\n"
    )


def test_an_overrides_error_names_no_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = _sim_error(SCENARIO, tmp_path, capsys, "auto_topology.devices.0.count=-3")
    assert err == (
        "edgespec sim: config field 'auto_topology.devices[0].count': must be >= 1, got -3\n"
    )


def test_a_key_a_merge_brings_names_its_line_in_the_anchored_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SCENARIO.replace(
        "    - name: orin\n      count: 2\n",
        "    - &orin\n      name: orin\n      count: 2\n    - <<: *orin\n      name: pi\n",
    ).replace("      count: 2\n", "      count: -3\n")
    file, err = _sim_error(text, tmp_path, capsys, "auto_topology.devices.0.count=1")
    assert err == (
        f"edgespec sim: {file}:9: config field 'auto_topology.devices[1].count': must be "
        ">= 1, got -3\n"
    )


def test_a_list_item_an_alias_gives_names_the_aliass_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second pool repeats the first, whose bad count an override mends in the first
    alone: the error is at the alias (line 12), not at the anchor (line 7)."""
    text = SCENARIO.replace("    - name: orin\n", "    - &orin\n      name: orin\n")
    text = text.replace("      count: 2\n", "      count: -3\n")
    text = text.replace("  servers:\n", "    - *orin\n  servers:\n")
    file, err = _sim_error(text, tmp_path, capsys, "auto_topology.devices.0.count=1")
    assert err == (
        f"edgespec sim: {file}:12: config field 'auto_topology.devices[1].count': must be "
        ">= 1, got -3\n"
    )


def test_the_line_is_the_files_as_read_though_it_changed_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy's error is found after the run folder is claimed; the user edited the
    file meanwhile (two lines put before the policy): the line is still the one read."""
    from edgespec.sim import run_folder

    claim = run_folder.claim_run_folder
    file = tmp_path / "my.yaml"

    def claimed_then_edited(*args: Any) -> Path:
        file.write_text("# edited\n# since\n" + file.read_text())
        return claim(*args)

    monkeypatch.setattr(run_folder, "claim_run_folder", claimed_then_edited)
    text = SCENARIO.replace("{name: fcfs}", "{name: nope}")
    _, err = _sim_error(text, tmp_path, capsys)
    assert err == (
        f"edgespec sim: {file}:14: config field 'policies.batching.name': unknown batching "
        f"policy 'nope'; known: {sorted(BATCHING)}\n"
    )


def test_a_sweep_point_that_makes_a_files_field_bad_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``think_time_s`` (line 18) applies only to closed_loop; the point's own field, no line."""
    file, err = _sim_error(SCENARIO, tmp_path, capsys, "--sweep", "workload.kind=poisson")
    assert err == (
        f"edgespec sim: {file}:18: config field 'workload.think_time_s': at sweep point 1 of 1 "
        "(workload.kind=poisson): applies only to kind: closed_loop (kind is poisson)\n"
    )
    _, err = _sim_error(SCENARIO, tmp_path, capsys, "--sweep", "seed=-1,0")
    assert err == (
        "edgespec sim: config field 'seed': at sweep point 1 of 2 (seed=-1): must be >= 0, got -1\n"
    )


def test_bench_sim_names_the_line_of_bench_yaml(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: Any) -> None:
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr("edgespec.sim.commands.bench._timed", never)
    bench = bundled_scenarios_dir() / "bench.yaml"
    line = next(
        n for n, text in enumerate(bench.read_text().splitlines(), 1) if "think_time_s" in text
    )
    assert main(["bench", "sim", "workload.kind=poisson"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec bench sim: {bench}:{line}: config field 'workload.think_time_s': applies only "
        "to kind: closed_loop (kind is poisson)\n"
    )
    assert main(["bench", "sim", "seed=-1"]) == 2
    assert capsys.readouterr().err == (
        "edgespec bench sim: config field 'seed': must be >= 0, got -1\n"
    )
