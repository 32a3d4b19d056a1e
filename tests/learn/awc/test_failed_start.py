"""`edgespec train awc-data` that fails before its first scenario is written leaves no
``run.json`` (nor the folders it made) behind: was a ``run.json`` that refused the next
run with other settings, though nothing had run."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("ray")

import edgespec.learn.awc.data as data_module
from edgespec.cli import main
from edgespec.learn.awc.data import AwcTask, ScenarioRows
from edgespec.sweeps import executor as executor_module
from tests.learn.awc.test_folder import _rows

UNREACHABLE = "127.0.0.1:1"
"""A Ray address whose port refuses a TCP connection at once."""


def _awc_data(out: Path, *flags: str) -> int:
    return main(["train", "awc-data", "--out", str(out), "--workers", "1", *flags])


def _fake_scenarios(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hand-made rows, serially: no simulation and no Ray."""
    monkeypatch.setattr(data_module, "run_awc_scenario", lambda task: _rows(task, set()))
    monkeypatch.setattr(
        executor_module, "make_executor", lambda *args, **kwargs: executor_module.SerialExecutor()
    )


def test_an_unreachable_address_leaves_no_folder_and_the_next_run_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "new" / "x2"
    assert _awc_data(out, "--address", UNREACHABLE, "--quick") == 2
    assert capsys.readouterr().err.endswith(
        f"edgespec train awc-data: --address {UNREACHABLE}: no Ray cluster reachable there "
        "(Connection refused within 5 s); start one (ray start --head) or leave --address "
        "out for a local Ray\n"
    )
    assert not (tmp_path / "new").exists()  # nor its parent folder, made for it
    _fake_scenarios(monkeypatch)
    assert _awc_data(out, "--scenarios", "2", "--duration-s", "2") == 0
    assert "2 scenarios, 0 already done" in capsys.readouterr().err


def test_an_existing_folder_is_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x2"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    assert _awc_data(out, "--address", UNREACHABLE, "--quick") == 2
    assert "no Ray cluster reachable there" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def _failing_after(num_scenarios: int) -> Callable[..., Any]:
    """A ``make_executor`` whose map yields ``num_scenarios`` rows, then raises."""

    class Failing:
        def map_unordered(
            self, fn: Callable[[AwcTask], ScenarioRows], items: Sequence[AwcTask]
        ) -> Iterator[tuple[int, ScenarioRows]]:
            for index in range(num_scenarios):
                yield index, fn(items[index])
            raise KeyboardInterrupt

    return lambda *args, **kwargs: Failing()


def test_an_interrupt_before_any_scenario_removes_run_json_after_one_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_scenarios(monkeypatch)
    out = tmp_path / "d"
    monkeypatch.setattr(executor_module, "make_executor", _failing_after(0))
    assert _awc_data(out, "--quick") == 130
    assert capsys.readouterr().err.endswith("edgespec train awc-data: interrupted\n")
    assert not out.exists()
    monkeypatch.setattr(executor_module, "make_executor", _failing_after(1))
    assert _awc_data(out, "--quick") == 130
    assert sorted(p.name for p in out.iterdir()) == ["configs", "contexts", "run.json"]
    assert [p.name for p in (out / "contexts").iterdir()] == ["s00000.parquet"]
    monkeypatch.setattr(executor_module, "make_executor", _failing_after(0))
    assert _awc_data(out, "--quick") == 130  # its run.json was there before: kept
    assert sorted(p.name for p in out.iterdir()) == ["configs", "contexts", "run.json"]
