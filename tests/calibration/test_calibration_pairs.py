"""``edgespec calibrate`` with a pair it cannot run, and a real run that fails.

Before: a model ``--target`` without ``--draft`` was refused as ``--draft truncated:
unknown model 'truncated'``, a flag the user never gave; a draft of another vocabulary was
profiled for minutes, then failed in the drafter processes with a traceback
(``RuntimeError: drafter process 0: RequestError ...``, exit 1), as did any failure of a
drafter process, leaving ``--out`` with a profile and no word of what was missing."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from edgespec.calibration import runs
from edgespec.cli import main
from tests.models.pair_dirs import save_pair_models


def test_a_model_target_without_a_draft_says_the_default_does_not_fit(
    cheap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", "--target", "gemma3-270m", "--out", "o"]) == 2
    assert capsys.readouterr().err == (
        "edgespec calibrate: --draft truncated (the default) is the synthetic target's first "
        "layers: a model --target needs --draft MODEL or ngram\n"
    )
    assert not (cheap / "o").exists()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_pair_models(tmp_path_factory.mktemp("models"))


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("calibrate went on past its checks")


def test_a_draft_of_another_vocabulary_is_refused_before_profiling(
    models: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for work in ("profile_scenario", "run_real"):
        monkeypatch.setattr(f"edgespec.calibration.command.{work}", _never)
    monkeypatch.chdir(models)
    argv = ["calibrate", "--target", "target", "--draft", "wide", "--threads", "1"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec calibrate: --draft wide has a vocabulary of 96 tokens, the target 48: it "
        "would draft ids the target does not have (share the target's tokenizer)"
    )
    assert not (tmp_path / "o").exists()


def _failing_run_real(backend: Any, make_draft: Any, *args: Any, **kwargs: Any) -> Any:
    """The real run, its drafter processes given a draft that cannot be built."""
    return runs.run_real(backend, partial(int, "not a draft"), *args, **kwargs)


def test_a_failing_drafter_process_is_one_line_saying_what_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("edgespec.calibration.command.run_real", _failing_run_real)
    out = tmp_path / "o"
    argv = ["calibrate", "--out", str(out), "--threads", "1", "--clients", "1"]
    argv += ["--requests", "1", "--runs", "1", "--warmup", "0", "--max-new-tokens", "4"]
    assert main(argv) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec calibrate: drafter process 0: ValueError: invalid literal for int() with "
        "base 10: 'not a draft'; the calibration stopped before its trace and comparison: "
        f"{out} holds only this run's profile (rerun with --profile {out / 'profile.yaml'} "
        f"--out {out} --overwrite to reuse it)"
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "profile-draft.yaml",
        "profile-report.json",
        "profile.yaml",
    ]
