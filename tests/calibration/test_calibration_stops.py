"""``edgespec calibrate`` stopped by Ctrl-C (or SIGTERM) at each of its steps said only
``edgespec calibrate: interrupted``: it now says first, in one line, what it had done,
what its folder holds of this run and how to go on, and that way of going on is accepted.
Each step is stopped in-process by a monkeypatched step raising the signal's exception,
as the command's own code would see it (the synthetic pair, profiled by hand-built fits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.calibration.runs import RealRun
from edgespec.cli import main
from edgespec.runtime.commands.signals import Terminated
from tests.calibration.test_profile_fit_warning import _fitted

SIZES = ["--threads", "1", "--clients", "1", "--requests", "1", "--max-new-tokens", "4",
         "--prompt-tokens", "8"]  # fmt: skip
INTERRUPTED = "edgespec calibrate: interrupted"


def _stop(exc: type[BaseException]) -> object:
    def stop(*args: object, **kwargs: object) -> None:
        raise exc

    return stop


def _calibrate(out: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, list[str]]:
    """The status and the last two lines on stderr of ``edgespec calibrate --out OUT``."""
    capsys.readouterr()
    status = main(["calibrate", "--out", str(out), *SIZES, *flags])
    return status, capsys.readouterr().err.splitlines()[-2:]


def test_stopped_while_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("edgespec.calibration.command._pair", _stop(KeyboardInterrupt))
    out = tmp_path / "cal"
    assert _calibrate(out, capsys) == (130, [
        "edgespec calibrate: interrupted while loading the pair and its prompts, before it "
        "wrote anything: run the same command to start again",
        INTERRUPTED,
    ])  # fmt: skip
    assert not out.exists()


def test_stopped_while_profiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folder this run made, empty, is removed (no empty ``runs/calibration-<time>``
    left behind); one that was there before is kept."""
    monkeypatch.setattr("edgespec.profiling.run.profile_pair", _stop(KeyboardInterrupt))
    out = tmp_path / "cal"
    assert _calibrate(out, capsys) == (130, [
        "edgespec calibrate: interrupted while profiling the pair: nothing of this run is "
        f"kept (nothing was measured yet), {out} removed; run the same command to start "
        "again",
        INTERRUPTED,
    ])  # fmt: skip
    assert not out.exists()

    out.mkdir()
    assert _calibrate(out, capsys) == (130, [
        f"edgespec calibrate: interrupted while profiling the pair: {out} holds nothing of "
        "this run (nothing was measured yet); run the same command to start again",
        INTERRUPTED,
    ])  # fmt: skip
    assert list(out.iterdir()) == []


def test_stopped_in_the_real_run_keeps_the_profile_and_the_rerun_said_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("edgespec.profiling.run.profile_pair", lambda *a, **k: _fitted(0.002))
    monkeypatch.setattr("edgespec.calibration.command.run_real", _stop(KeyboardInterrupt))
    out = tmp_path / "cal"
    profile = out / "profile.yaml"
    assert _calibrate(out, capsys) == (130, [
        "edgespec calibrate: interrupted after profiling the pair, before its trace and "
        f"comparison: {out} holds only this run's profile (rerun with --profile {profile} "
        f"--out {out} --overwrite to reuse it)",
        INTERRUPTED,
    ])  # fmt: skip
    kept = sorted(path.name for path in out.iterdir())
    assert kept == ["profile-draft.yaml", "profile-report.json", "profile.yaml"]

    # the rerun said: the profile is read and kept (no profiling), stopped by SIGTERM now
    monkeypatch.setattr("edgespec.profiling.run.profile_pair", _stop(AssertionError))
    monkeypatch.setattr("edgespec.calibration.command.run_real", _stop(Terminated))
    rerun = ("--profile", str(profile), "--overwrite")
    assert _calibrate(out, capsys, *rerun) == (143, [
        "edgespec calibrate: terminated after reading --profile, before its trace and "
        f"comparison: {out} holds nothing of this run; run the same command to start again",
        "edgespec calibrate: terminated",
    ])  # fmt: skip
    assert sorted(path.name for path in out.iterdir()) == kept


def test_stopped_in_the_simulated_run_keeps_the_profile_and_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run of no requests (its trace empty): only the step matters here."""
    real = RealRun((), (), (), (), (0.0, 0.0, 0.0))
    monkeypatch.setattr("edgespec.profiling.run.profile_pair", lambda *a, **k: _fitted(0.002))
    monkeypatch.setattr("edgespec.calibration.command._real_runs", lambda *a: (1.0, real))
    monkeypatch.setattr("edgespec.calibration.command.simulate_run", _stop(KeyboardInterrupt))
    out = tmp_path / "cal"
    assert _calibrate(out, capsys) == (130, [
        f"edgespec calibrate: interrupted after its real run, before its comparison: {out} "
        f"holds this run's profile and trace.jsonl (rerun with --profile {out}/profile.yaml "
        f"--out {out} --overwrite to reuse the profile)",
        INTERRUPTED,
    ])  # fmt: skip
    assert (out / "trace.jsonl").is_file() and not (out / "comparison.md").exists()

    given = ("--profile", str(out / "profile.yaml"), "--overwrite")
    assert _calibrate(out, capsys, *given) == (130, [
        f"edgespec calibrate: interrupted after its real run, before its comparison: {out} "
        f"holds this run's trace.jsonl; run the same command with --out {out} --overwrite to "
        "start again",
        INTERRUPTED,
    ])  # fmt: skip


def test_a_calibration_without_out_makes_its_new_folder_and_a_failed_one_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default runs/calibration-<time> was claimed without being made: two calibrations
    started in one second were given the same folder."""
    import argparse
    import time

    from edgespec.calibration.folder import calibration_folder
    from edgespec.errors import UserInputError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(time, "strftime", lambda *args: "20261206-020000")
    default = Path("runs/calibration-20261206-020000")
    for stop, status in ((UserInputError("no such pair"), 2), (KeyboardInterrupt(), 130)):
        monkeypatch.setattr("edgespec.calibration.command._pair", _stop_with(stop, default))
        assert main(["calibrate", *SIZES]) == status
        assert not Path("runs").exists()  # what its claim made, removed again
    capsys.readouterr()
    args = argparse.Namespace(out=None, overwrite=False, resume=False, profile=None)
    assert calibration_folder(args, remove=False) == default
    assert calibration_folder(args, remove=False) == default.with_name(f"{default.name}-2")
    assert sorted(p.name for p in Path("runs").iterdir()) == [default.name, f"{default.name}-2"]


def _stop_with(exc: BaseException, claimed: Path) -> object:
    def stop(*args: object, **kwargs: object) -> None:
        assert claimed.is_dir()  # made when claimed, before anything loads
        raise exc

    return stop
