"""Per-category errors and refits of a profile report (edgespec.learn.profile_residuals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.learn import profile_residuals as pr


def _padded_time(entries: list[tuple[int, int]]) -> float:
    size = len(entries)
    new = max(n for n, _ in entries)
    total = max(n + c for n, c in entries)
    return 1e-3 * size * new + 1e-7 * size * new * total + 2e-4 * size * total + 0.05


def _report() -> dict[str, Any]:
    samples = []
    for i in range(40):
        entries = [(1 + (i * 7) % 50, (i * 131) % 900)] + [(1 + i % 5, 100 * (i % 9))] * (i % 4)
        category = ("compute", "memory", "mixed")[i % 3]
        time_s = _padded_time(entries)
        for run, scale in enumerate((1.0, 3.0, 0.999)):  # the median run is the exact time
            samples.append({
                "config": i, "category": category, "split": "test" if i % 4 == 0 else "train",
                "run": run, "entries": entries, "time_s": time_s * scale,
            })  # fmt: skip
    coefficients = {"a_s": 1e-3, "b_compute_s": 1e-7, "b_read_s": 2e-4, "c_s": 0.05}
    return {"wisp": {"coefficients": coefficients}, "samples": samples}


def test_points_take_each_configurations_median_run() -> None:
    pts = pr.points(_report())
    assert len(pts) == 40
    assert pts[3].time_s == _padded_time(list(pts[3].entries))
    assert [p.split for p in pts[:4]] == ["test", "train", "train", "train"]


def test_padded_backend_fits_the_padded_shape_and_not_eq19() -> None:
    fits = pr.refits(_report())
    assert fits["padded shape"].mape_pct < 1e-6
    assert fits["Eq. 19 (additive)"].mape_pct > 1.0
    errors = pr.category_errors(_report())
    assert {(e.category, e.split) for e in errors} >= {("mixed", "train"), ("compute", "test")}
    single = [e for e in errors if e.category == "compute"]
    assert all(e.count > 0 and e.mape_pct >= abs(e.bias_pct) for e in single)


def test_main_prints_the_table_and_both_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gemma-report.json"
    path.write_text(json.dumps(_report()))
    assert pr.main([str(path)]) == 0
    out = capsys.readouterr().out
    header = ["category", "split", "n", "MAPE", "%", "bias", "%", "mean", "s"]
    assert out.splitlines()[0].split() == header
    assert "Eq. 19 (additive): held-out R²" in out and "padded shape: held-out R² 1.000" in out
