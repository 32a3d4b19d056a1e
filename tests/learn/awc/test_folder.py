"""`edgespec train awc-data`'s folder: its ``run.json`` keeps the settings that shape the
rows, and a run with other ones is refused (was: resumed, mixing two grids' scenarios);
a scenario where no configuration finished a request is left unlabelled (was: labelled
fused, the smaller γ of an all-equal tie), and a run with none left is refused. The
scenarios' runs are replaced by hand-made rows, so no simulation runs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")

import edgespec.learn.awc.data as data_module
from edgespec.cli import main
from edgespec.learn.awc import tables
from edgespec.learn.awc.data import (
    CONFIG_COLUMNS,
    CONFIGURATIONS,
    CONTEXT_COLUMNS,
    DEFAULT_WEIGHTS,
    AwcTask,
    ScenarioRows,
    label_scenarios,
)
from edgespec.sweeps import executor as executor_module


def _rows(task: AwcTask, empty: set[int]) -> ScenarioRows:
    """Hand-made rows of ``task``'s scenario: γ = 4 best; in the ``empty`` scenarios no
    run finishes a request, and throughput (forwarded tokens) still differs, highest for
    fused."""
    sid = task.scenario.scenario_id
    configs: dict[str, list[Any]] = {name: [] for name in CONFIG_COLUMNS}
    contexts: dict[str, list[Any]] = {name: [] for name in CONTEXT_COLUMNS}
    for gamma in CONFIGURATIONS:
        ttft = None if sid in empty else 0.1 + 0.01 * abs(gamma - 4)
        row = (sid, gamma, ttft, ttft, 100.0 - gamma, 0.0, 0 if sid in empty else 3)
        for name, value in zip(CONFIG_COLUMNS, row, strict=True):
            configs[name].append(value)
        features = (sid, gamma, 0.5, 0.6, 10.0, 20.0, gamma)
        for name, value in zip(CONTEXT_COLUMNS, features, strict=True):
            contexts[name].append(value)
    return ScenarioRows(sid, configs, contexts, 0.0)


@dataclass(frozen=True, slots=True)
class Runs:
    """The scenarios run (serially, by :func:`_rows`) and those that finish nothing."""

    ran: list[int] = field(default_factory=list)
    empty: set[int] = field(default_factory=lambda: {1})


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Runs:
    found = Runs()

    def run(task: AwcTask) -> ScenarioRows:
        found.ran.append(task.scenario.scenario_id)
        return _rows(task, found.empty)

    monkeypatch.setattr(data_module, "run_awc_scenario", run)
    monkeypatch.setattr(
        executor_module, "make_executor", lambda *args, **kwargs: executor_module.SerialExecutor()
    )
    return found


def _awc_data(out: Path, *flags: str) -> int:
    return main(["train", "awc-data", "--out", str(out), "--workers", "1", *flags])


def test_run_json_records_the_settings_that_shape_the_rows(tmp_path: Path, runs: Runs) -> None:
    out = tmp_path / "d"
    assert _awc_data(out, "--scenarios", "2", "--duration-s", "1.5", "--seed", "3") == 0
    assert json.loads((out / "run.json").read_text()) == {
        "contexts_per_run": 8,
        "duration_s": 1.5,
        "fused_gamma": 4,
        "fused_rounds": "cloud_only",
        "quick": False,
        "seed": 3,
        "workload_trace_sha256": None,
    }


@pytest.mark.parametrize(
    ("second", "named"),
    [
        (["--scenarios", "6", "--duration-s", "1", "--fused-rounds", "colocated"],
         "duration_s 6.0 there, 1.0 now; fused_rounds 'cloud_only' there, 'colocated' now; "
         "quick True there, False now"),
        (["--quick", "--seed", "1"], "seed 0 there, 1 now"),
        (["--quick", "--contexts-per-run", "3", "--fused-gamma", "6"],
         "contexts_per_run 8 there, 3 now; fused_gamma 4 there, 6 now"),
        (["--scenarios", "4", "--duration-s", "6"], "quick True there, False now"),
    ],
)  # fmt: skip
def test_a_resume_with_other_settings_is_refused_naming_them(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    runs: Runs,
    second: list[str],
    named: str,
) -> None:
    """Was "6 scenarios, 4 already done": the quick scenarios kept beside the new grid's."""
    out = tmp_path / "awcq"
    assert _awc_data(out, "--quick") == 0
    before = {p.name: p.stat().st_mtime_ns for p in (out / "contexts").iterdir()}
    labels = (out / "labels.parquet").read_bytes()
    runs.ran.clear()
    capsys.readouterr()
    assert _awc_data(out, *second) == 2
    assert capsys.readouterr().err.endswith(
        f"edgespec train awc-data: --out '{out}' holds an awc-data run made with other settings "
        f"({named}): give a new --out, or the settings it was made with\n"
    )
    assert runs.ran == []
    assert {p.name: p.stat().st_mtime_ns for p in (out / "contexts").iterdir()} == before
    assert (out / "labels.parquet").read_bytes() == labels


def test_another_workload_trace_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"arrival_ms": 0, "prompt_tokens": 20, "output_tokens": 30}\n')
    out = tmp_path / "d"
    assert _awc_data(out, "--quick", "--workload-trace", str(trace)) == 0
    assert _awc_data(out, "--quick", "--workload-trace", str(trace)) == 0  # the same bytes
    before = hashlib.sha256(trace.read_bytes()).hexdigest()
    trace.write_text('{"arrival_ms": 0, "prompt_tokens": 20, "output_tokens": 31}\n')
    now = hashlib.sha256(trace.read_bytes()).hexdigest()
    capsys.readouterr()
    assert _awc_data(out, "--quick", "--workload-trace", str(trace)) == 2
    named = f"workload_trace_sha256 {before!r} there, {now!r} now"
    assert f"made with other settings ({named}): give a new --out" in capsys.readouterr().err


def test_same_settings_resume_and_more_scenarios_extend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    out = tmp_path / "d"
    assert _awc_data(out, "--scenarios", "3", "--duration-s", "2") == 0
    assert runs.ran == [0, 1, 2]
    assert _awc_data(out, "--scenarios", "3", "--duration-s", "2") == 0
    assert _awc_data(out, "--scenarios", "5", "--duration-s", "2") == 0
    assert runs.ran == [0, 1, 2, 3, 4]  # each scenario drawn by (seed, id): only the new ones
    err = capsys.readouterr().err
    assert "3 scenarios, 3 already done" in err and "5 scenarios, 3 already done" in err


def test_a_folder_from_before_run_json_is_taken_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    out = tmp_path / "d"
    assert _awc_data(out, "--quick") == 0
    (out / "run.json").unlink()
    capsys.readouterr()
    assert _awc_data(out, "--quick") == 0
    err = capsys.readouterr().err
    note = (
        f"{out}: 4 finished scenarios and no run.json (written before awc-data recorded "
        "its settings): taken as made with this run's settings\n"
    )
    assert err.count(note) == 1
    assert json.loads((out / "run.json").read_text())["quick"] is True


def test_a_scenario_where_nothing_finished_has_no_label() -> None:
    """Was fused (γ = 1): every score tied at 0, or throughput alone ranked them."""
    rows = [_rows(AwcTask(_scenario(i)), {1}).configs for i in (0, 1)]
    configs = {name: rows[0][name] + rows[1][name] for name in CONFIG_COLUMNS}
    assert label_scenarios(configs, DEFAULT_WEIGHTS) == {0: 4}
    tied = {name: [v if name != "throughput_tokens_per_s" else 0.0 for v in values]
            for name, values in rows[1].items()}  # fmt: skip
    assert label_scenarios(tied, DEFAULT_WEIGHTS) == {}


def test_unlabelled_scenarios_are_said_once_and_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    out = tmp_path / "d"
    assert _awc_data(out, "--scenarios", "3", "--duration-s", "1") == 0
    err = capsys.readouterr().err
    note = (
        "1 of 3 scenarios finished no request in any configuration: left unlabelled "
        "(a longer --duration-s gives them time)\n"
    )
    assert err.count(note) == 1
    labels = tables.read_parquet_file(out / "labels.parquet")
    assert labels == {"scenario_id": [0, 2], "label_gamma": [4, 4]}
    summary = json.loads((out / "last_run.json").read_text())
    assert (summary["labels"], summary["unlabelled"]) == ({"4": 2}, 1)
    weights = tmp_path / "w.json"  # train awc takes the labelled scenarios' contexts only
    assert main(["train", "awc", "--data", str(out), "--out", str(weights), "--epochs", "1"]) == 0
    assert json.loads(weights.read_text())["metadata"]["label_counts"] == {"4": 2}


@pytest.mark.parametrize(
    ("empty", "scenarios", "told"),
    [
        ({1, 2}, "3", "the folder holds 3 scenarios, 2 unlabelled (no configuration finished a "
         "request in them): a longer awc-data --duration-s gives them time (in a new --out)"),
        (set(), "1", "the folder holds 1 scenario, 0 unlabelled: run awc-data with more "
         "--scenarios"),
    ],
)  # fmt: skip
def test_train_awc_on_one_labelled_scenario_says_how_many_are_unlabelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs, empty: set[int],
    scenarios: str, told: str,
) -> None:  # fmt: skip
    """Was "need at least two labelled scenarios", with no word of the unlabelled ones."""
    runs.empty.clear()
    runs.empty.update(empty)
    out = tmp_path / "d"
    assert _awc_data(out, "--scenarios", scenarios, "--duration-s", "1") == 0
    capsys.readouterr()
    weights = tmp_path / "w.json"
    assert main(["train", "awc", "--data", str(out), "--out", str(weights)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {out}: need at least two labelled scenarios (one is held out), "
        f"found 1; {told}\n"
    )
    assert not weights.exists()


def test_a_run_where_no_scenario_finished_a_request_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    runs.empty.update({0, 2})
    out = tmp_path / "d"
    assert _awc_data(out, "--scenarios", "3", "--duration-s", "1") == 2
    assert capsys.readouterr().err.endswith(
        "edgespec train awc-data: "
        f"{out}: no configuration of its 3 scenarios finished a request, so "
        "none has a label: give a longer --duration-s, in a new --out (this folder keeps its "
        "settings)\n"
    )
    assert not (out / "labels.parquet").exists() and not (out / "last_run.json").exists()
    assert _awc_data(tmp_path / "one", "--scenarios", "1", "--duration-s", "1") == 2
    assert "no configuration of its 1 scenario finished a request" in capsys.readouterr().err


def _scenario(scenario_id: int) -> Any:
    from edgespec.learn.awc.grid import sample_scenario

    return sample_scenario(scenario_id, 0, 1.0)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not valid JSON: Expecting property name enclosed in double quotes"),
        ("[]", "not a JSON object"),
        ("\xff", "not UTF-8 text"),
        (" " * 70_000, "over 65,536 bytes"),
    ],
)
def test_a_run_json_that_is_not_settings_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs, text: str, problem: str
) -> None:
    out = tmp_path / "d"
    out.mkdir()
    (out / "run.json").write_bytes(text.encode("latin-1"))
    assert _awc_data(out, "--quick") == 2
    assert capsys.readouterr().err.endswith(
        f"edgespec train awc-data: {out / 'run.json'}: not a settings file ({problem})\n"
    )
    assert runs.ran == []
