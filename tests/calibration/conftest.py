"""The calibration tests' shared fixture: a folder where nothing heavy may run."""

from __future__ import annotations

from pathlib import Path

import pytest


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("calibrate went on past its checks")


@pytest.fixture
def cheap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """In ``tmp_path`` (returned), with no model loaded, profiled or run for real: each
    fails the test."""
    for work in ("edgespec.models.loading.load_model",
                 "edgespec.calibration.command.profile_scenario",
                 "edgespec.calibration.command.run_real"):  # fmt: skip
        monkeypatch.setattr(work, _never)
    monkeypatch.chdir(tmp_path)
    return tmp_path
