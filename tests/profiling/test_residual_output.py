"""What ``edgespec profile --residuals`` says in the user's terms: a refit's MAE to 3
significant digits (a small model's is a fraction of a millisecond), and a report whose
``samples`` hold no timed batch said as what they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.policies.estimator import BatchShape, WispCoefficients
from tests.profiling.test_residuals import _report


def test_a_sub_millisecond_mae_is_printed_to_3_significant_digits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A small model's errors are fractions of a millisecond: ``MAE 0 ms`` said nothing."""
    report = _report()
    for s in report["samples"]:
        s["time_s"] *= 1e-3
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert main(["profile", "--residuals", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3] == (
        "Eq. 19 (additive): held-out R² -4.537, MAE 0.123 ms, MAPE 73.0% (10 configurations)"
    )


@pytest.mark.parametrize(
    ("samples", "got"), [(None, "missing"), ([], "empty"), ("x", "not a list")]
)
def test_a_report_without_samples_says_what_its_samples_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], samples: object, got: str
) -> None:
    report = _report()
    if samples is None:
        del report["samples"]
    else:
        report["samples"] = samples
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert main(["profile", "--residuals", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec profile: --residuals {path}: 'samples' is {got}; it lists the report's "
        "timed batches\n"
    )


def test_the_written_fit_is_scored_apart_from_its_unconstrained_refit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The category table breaks down the profile's own (written) coefficients; the
    ``Eq. 19 (additive)`` line is a refit, which a clipped profile's is not: both are said,
    each for what it is (the refit alone read as the profile's held-out score)."""
    exact = {"a_s": 2e-3, "b_compute_s": 1e-7, "b_read_s": 3e-4, "c_s": 0.04}
    report = _report()
    for s in report["samples"]:  # every run's time is Eq. 19's with `exact`
        shape = BatchShape.of([(int(n), int(c)) for n, c in s["entries"]])
        s["time_s"] = WispCoefficients(**exact).estimate_s(shape)
    report["wisp"] = {"coefficients": {**exact, "c_s": exact["c_s"] + 0.025}}  # off by 25 ms
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert main(["profile", "--residuals", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    held_out = {s["config"]: s["time_s"] for s in report["samples"] if s["split"] == "test"}
    mape_pct = 100 * sum(0.025 / t for t in held_out.values()) / len(held_out)
    assert lines[-5].startswith(
        "written Eq. 19 fit (the profile's coefficients): held-out R² "
    ) and lines[-5].endswith(f", MAE 25 ms, MAPE {mape_pct:.1f}% (10 configurations)")
    assert lines[-4] == "refitted on the 30 training configurations (least squares, unconstrained):"
    assert lines[-3].startswith("Eq. 19 (additive): held-out R² 1.000, MAE ")
