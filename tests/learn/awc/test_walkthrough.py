"""What a user following docs/LEARN.md meets in ``train awc-data`` / ``train awc``:
the closing summary (and the workload trace's line) is one line however long the path
(was: wrapped at the console's 80 columns when not on a terminal, the folder on a line of
its own) and says "1 scenario"; a ``--workload-trace`` the reader refuses is refused
naming the flag (was: the reader's line alone); ``train awc`` on a folder with simulated
scenarios and no ``labels.parquet`` says why (was: "no such file (run edgespec train
awc-data)", after that very command had run). The scenarios' runs are hand-made rows: no
simulation runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from edgespec.cli import main
from tests.learn.awc.test_folder import Runs, _awc_data, runs

__all__ = ["runs"]  # the fixture, used by name


def test_the_summary_is_one_line_however_long_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    runs.empty.clear()
    out = tmp_path / ("a-folder-name-long-enough-to-pass-eighty-columns-" * 2)
    trace = tmp_path / ("a-workload-trace-named-at-length-" * 3 + ".jsonl")
    trace.write_text('{"arrival_ms": 0, "prompt_tokens": 20, "output_tokens": 30}\n')
    flags = ("--scenarios", "1", "--duration-s", "1", "--workload-trace", str(trace))
    assert _awc_data(out, *flags) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"GSM8K lengths: {trace}"
    assert err[-1].startswith("1 scenario in ") and err[-1].endswith(f"1 = fused) → {out}")


def test_one_scenario_is_said_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    runs.empty.clear()
    assert _awc_data(tmp_path / "d", "--scenarios", "1", "--duration-s", "1") == 0
    err = capsys.readouterr().err
    assert "1 scenario, 0 already done\n" in err and "\n1 scenario in " in err


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{\n "a": 1\n}\n', "1: a JSON document over several lines"),
        ('{"prompt_tokens": 5}\n', "1: arrival_ms: missing field"),
        ("", ": trace holds no requests"),
    ],
)
def test_a_workload_trace_the_reader_refuses_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs, text: str, problem: str
) -> None:
    trace = tmp_path / "w.jsonl"
    trace.write_text(text)
    out = tmp_path / "d"
    assert _awc_data(out, "--quick", "--workload-trace", str(trace)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"edgespec train awc-data: --workload-trace {trace}: ")
    assert problem in err and err.count("\n") == 1
    assert runs.ran == [] and not out.exists()


def test_train_awc_on_simulated_scenarios_without_labels_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Runs
) -> None:
    runs.empty.update({0, 2})  # none of the 3 finishes a request: awc-data labels none
    out = tmp_path / "d"
    assert _awc_data(out, "--scenarios", "3", "--duration-s", "1") == 2
    capsys.readouterr()
    weights = tmp_path / "w.json"
    assert main(["train", "awc", "--data", str(out), "--out", str(weights)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: --data {out}: no labels.parquet beside its 3 simulated scenarios "
        "(the awc-data run that made them stopped before labelling, or labelled none): rerun "
        "that awc-data command, which labels them or says why it cannot\n"
    )
    assert not weights.exists()
    empty = tmp_path / "empty"  # a folder awc-data never ran in keeps its message
    empty.mkdir()
    assert main(["train", "awc", "--data", str(empty), "--out", str(weights)]) == 2
    assert "labels.parquet: no such file (run edgespec train awc-data)" in capsys.readouterr().err
    assert json.loads((out / "run.json").read_text())["duration_s"] == 1.0
