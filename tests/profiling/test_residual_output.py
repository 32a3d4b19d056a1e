"""What ``edgespec profile --residuals`` says in the user's terms: a refit's MAE to 3
significant digits (a small model's is a fraction of a millisecond), and a report whose
``samples`` hold no timed batch said as what they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
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
