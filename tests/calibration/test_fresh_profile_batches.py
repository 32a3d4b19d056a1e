"""``edgespec calibrate``'s fresh profile times a model draft batched as ``edgespec profile``
does by default (``--draft-batches`` 1,2,4,8): the draft's Zhu files it writes beside the
profile are fitted on those calls. It timed the draft single-session only, so its Zhu
files were fitted on other calls than ``edgespec profile``'s of the same name."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from edgespec.calibration.fresh_profile import profile_scenario
from tests.calibration.test_profile_fit_warning import _fitted


def test_a_fresh_profile_times_the_draft_batched_as_edgespec_profile_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[dict[str, Any]] = []
    fit = _fitted(noise_s=0.0)

    def profile_pair(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs)
        return fit

    monkeypatch.setattr("edgespec.profiling.run.profile_pair", profile_pair)
    args = argparse.Namespace(
        max_new_tokens=48, gamma=4, clients=4, warmup=0, runs=1, threads=1, resume=False
    )
    prompts: list[list[tuple[int, ...]]] = [[tuple(range(32))]] * 4
    profile_scenario(args, tmp_path, ("t", None, None), ("d", None, None), prompts)
    assert [kwargs.get("draft_batches") for kwargs in asked] == [(1, 2, 4, 8)]
