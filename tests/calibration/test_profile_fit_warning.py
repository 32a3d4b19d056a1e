"""``edgespec calibrate`` warns, beside the profile's line, when the fresh profile's
held-out R² is below ``MIN_PROFILE_R2`` (0.5; it carried on without a word at 0.096)."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from edgespec.calibration import command
from edgespec.calibration.command import profile_summary

PATH = Path("runs/c/profile.yaml")
LINE = "profile: target held-out R² {r2}, MAPE 31.2%; wrote runs/c/profile.yaml"
WARNING = (
    "warning: held-out R² {r2} is below 0.5: the profile's verify-time estimator explains "
    "little of the measured times, so the comparison tests the fit more than the simulator; "
    "profile again with more --runs (and --warmup) on a quieter machine (--threads 1 on a "
    "shared one), or give a better profile with --profile"
)


@pytest.mark.parametrize(("r2", "shown"), [(0.096, "0.096"), (0.4994, "0.499"), (-1.7, "-1.700")])
def test_a_fit_below_the_threshold_is_warned_of(r2: float, shown: str) -> None:
    want = LINE.format(r2=shown) + "\n" + WARNING.format(r2=shown)
    assert profile_summary(r2, 31.24, PATH) == want


def test_no_variation_to_explain_is_warned_of() -> None:
    assert profile_summary(float("nan"), 31.2, PATH).splitlines()[1] == WARNING.format(r2="nan")


@pytest.mark.parametrize(("r2", "shown"), [(0.4996, "0.500"), (0.819, "0.819"), (1.0, "1.000")])
def test_a_fit_shown_at_or_above_the_threshold_is_one_line(r2: float, shown: str) -> None:
    assert profile_summary(r2, 31.2, PATH) == LINE.format(r2=shown)


def test_calibrate_prints_the_warning_after_profiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgespec.profiling import run

    fit = SimpleNamespace(wisp=SimpleNamespace(test=SimpleNamespace(r2=0.096, mape_pct=31.2)))

    def profile_pair(*args: Any, **kwargs: Any) -> Any:
        return fit

    def write_profiles(result: Any, out: Path, text: str) -> list[Path]:
        assert result is fit
        return [out]

    monkeypatch.setattr(run, "profile_pair", profile_pair)
    monkeypatch.setattr(run, "write_profiles", write_profiles)
    args = argparse.Namespace(max_new_tokens=8, gamma=2, clients=1, warmup=0, runs=1)
    prompts: list[list[tuple[int, ...]]] = [[(1, 2, 3, 4)]]
    got = command._profile(args, tmp_path, ("t", None, None), ("d", None, None), prompts)
    assert got == tmp_path / "profile.yaml"
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [
        LINE.format(r2="0.096").replace("runs/c/profile.yaml", str(got)),
        WARNING.format(r2="0.096"),
    ]


def test_docs_show_the_warning_as_printed() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "CALIBRATION.md").read_text()
    assert "\n" + WARNING.format(r2="0.096") + "\n" in docs
    assert "below 0.5 (`MIN_PROFILE_R2`" in docs
