"""benchmarks/verify_grid.py: the dry run times every grid point through TransformersTarget
and writes them in grid order; the Eq. 19 fit recovers known coefficients; the memory limit,
the H200 estimate and the flags."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from types import ModuleType

import pytest

from edgespec.hardware.presets import load_architecture
from edgespec.policies.estimator import BatchShape
from tests.benchmarks.scripts import load_script


def _script() -> ModuleType:
    return load_script("verify_grid.py", "verify_grid_script")


GRID = _script()


def test_the_dry_run_writes_one_timed_row_per_grid_point(tmp_path: Path) -> None:
    out = tmp_path / "grid.json"
    assert GRID.main(["--dry-run", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["device"], result["dtype"], result["shape"]["name"]) == (
        "cpu",
        "float32",
        "tiny",
    )
    assert result["grid"] == {"batch": [1, 2], "new_tokens": [1, 4], "context": [8, 24]}
    assert result["complete"] is True and result["mask_probe"] is False
    assert result["torch_threads"] == 1 and result["skipped"] == []
    points = [(r["batch"], r["new_tokens"], r["context"]) for r in result["rows"]]
    assert points == [(b, n, c) for b in (1, 2) for n in (1, 4) for c in (8, 24)]
    assert sorted(r["order"] for r in result["rows"]) == list(range(8))
    for row in result["rows"]:
        assert len(row["times_s"]) == 2 and min(row["times_s"]) > 0
        assert row["median_s"] == statistics.median(row["times_s"])
    assert result["numerics"] == ["exact"] and result["exact_over_lossy"] is None
    assert {r["numerics"] for r in result["rows"]} == {"exact"}
    fit = result["fit"]["exact"]
    assert set(fit["coefficients"]) == {"a_s", "b_compute_s", "b_read_s", "c_s"}
    assert (fit["train"]["num_samples"], fit["held_out"]["num_samples"]) == (6, 2)
    assert len(fit["held_out_points"]) == 2


def test_both_numerics_are_timed_at_every_point_and_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grid.json"
    assert GRID.main(["--dry-run", "--numerics", "exact,lossy", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    rows = result["rows"]
    for name in ("exact", "lossy"):
        points = [
            (r["batch"], r["new_tokens"], r["context"]) for r in rows if r["numerics"] == name
        ]
        assert points == [(b, n, c) for b in (1, 2) for n in (1, 4) for c in (8, 24)]
        assert result["fit"][name]["held_out"]["num_samples"] == 2
    ratio = result["exact_over_lossy"]
    assert ratio["num_points"] == 8 and ratio["min"] <= ratio["median"] <= ratio["max"]
    printed = capsys.readouterr().out
    assert f"exact / lossy pass time: median {ratio['median']:.3f}" in printed
    # the numerics alternate which goes first: the printed order of the first two points
    timed = [line.split()[-3].rstrip(":") for line in printed.splitlines() if line.startswith("B=")]
    assert timed[:4] == ["exact", "lossy", "lossy", "exact"]


def test_the_ratio_pairs_each_exact_row_with_the_lossy_row_of_its_point() -> None:
    rows = [
        {"numerics": "exact", "batch": 1, "new_tokens": 1, "context": 8, "median_s": 3.0},
        {"numerics": "lossy", "batch": 1, "new_tokens": 1, "context": 8, "median_s": 2.0},
        {"numerics": "exact", "batch": 2, "new_tokens": 1, "context": 8, "median_s": 1.0},
        {"numerics": "lossy", "batch": 2, "new_tokens": 1, "context": 8, "median_s": 4.0},
        {"numerics": "exact", "batch": 4, "new_tokens": 1, "context": 8, "median_s": 9.0},
    ]
    assert GRID.exact_over_lossy(rows) == {
        "median": 0.875,
        "min": 0.25,
        "max": 1.5,
        "num_points": 2,
    }
    assert GRID.exact_over_lossy(rows[:1]) is None


def test_the_fit_recovers_known_eq19_coefficients() -> None:
    a, b_compute, b_read, c = 3.3e-5, 3.4e-8, 4.6e-6, 0.0149  # WISP Table 12's magnitudes
    rows = []
    for batch, new, context in GRID.Grid().points():
        shape = BatchShape.of([(new, context)] * batch)
        time_s = a * shape.num_linear + b_compute * shape.num_interactions
        time_s += b_read * shape.num_cached + c
        rows.append({"batch": batch, "new_tokens": new, "context": context, "median_s": time_s})
    fit = GRID.fit_eq19(rows, seed=0)
    got = fit["coefficients"]
    for name, want in (("a_s", a), ("b_compute_s", b_compute), ("b_read_s", b_read), ("c_s", c)):
        assert got[name] == pytest.approx(want, rel=1e-6)
    assert fit["held_out"]["mape_pct"] < 1e-6
    assert fit["held_out"]["num_samples"] == round(0.25 * len(rows)) == 84


def test_too_few_rows_are_not_fitted() -> None:
    row = {"batch": 1, "new_tokens": 1, "context": 8, "median_s": 0.01}
    assert GRID.fit_eq19([row] * 5, seed=0) == {"skipped": "5 rows; the fit needs at least 6"}


def test_points_over_the_kv_limit_are_skipped_and_listed(tmp_path: Path) -> None:
    out = tmp_path / "grid.json"
    # tiny: 2 layers x 2 KV heads x 16 x 4 bytes x 2 = 512 B per token; B=2, c=24, n=4: 3 x 56
    # tokens = 86,016 B, the only point over 80,000 B.
    argv = ["--dry-run", "--max-kv-gib", str(80_000 / 2**30), "--out", str(out)]
    assert GRID.main(argv) == 0
    result = json.loads(out.read_text())
    assert result["skipped"] == [
        {"batch": 2, "new_tokens": 4, "context": 24, "reason": "over --max-kv-gib"}
    ]
    assert len(result["rows"]) == 7


def test_the_default_grid_and_its_h200_estimate_for_llama2_7b() -> None:
    grid = GRID.Grid()
    assert len(grid.points()) == 8 * 7 * 6
    arch = load_architecture("llama2-7b")
    fits = [p for p in grid.points() if GRID.kv_working_set_bytes(arch, 2, p) <= 60 * 2**30]
    assert len(fits) == 294
    # the docstring's figure: about 2.4 minutes with the model build, 2 + 10 passes a point
    assert 120 < GRID.estimate_grid_s(arch, 2, fits, 12) < 160


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--device", "tpu"], "--device must be cpu, cuda or cuda:N, got 'tpu'"),
        (["--repeats", "0"], "--repeats must be >= 1 and --warmup >= 0, got 0, 2"),
        (["--context", "0,8"], "--batch, --new-tokens and --context values must be >= 1"),
        (["--batch", "1,x"], "argument --batch: not comma-separated integers: '1,x'"),
        (["--numerics", "exact,exact"], "expected exact, lossy or exact,lossy, got 'exact,exact'"),
    ],
)
def test_bad_flags_are_refused_by_name(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        GRID.main(argv)
    assert message in capsys.readouterr().err
