"""``edgespec calibrate`` stopped while profiling kept nothing: a real pair's profile took
minutes and was measured again from the start. It keeps each configuration measured so far
(``profile-samples.jsonl``, the checkpoint ``edgespec profile --resume`` reads) and says
how to go on; the same command with ``--resume`` measures only the rest, and the finished
profile holds the kept samples as they were timed. A folder holding a partial profile is
refused without ``--resume`` or ``--overwrite``; ``--resume`` is refused where it cannot go
on, or when other settings measured the partial profile. The synthetic pair, profiled for
real; the stop raised from the progress callback after a configuration was kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.calibration import fresh_profile
from edgespec.cli import main

SIZES = ["--threads", "1", "--clients", "1", "--requests", "1", "--max-new-tokens", "4",
         "--prompt-tokens", "8", "--warmup", "0", "--runs", "1"]  # fmt: skip
STOP_AFTER = 3


def _stop_after_configs(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    def progress(index: int, total: int) -> None:
        if index + 1 == count:
            raise KeyboardInterrupt

    monkeypatch.setattr(fresh_profile, "_progress", progress)


def _stop_the_real_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def stop(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("edgespec.calibration.command.run_real", stop)


def _calibrate(out: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["calibrate", "--out", str(out), *SIZES, *flags])
    return status, capsys.readouterr().err


def _measured(path: Path) -> dict[int, list[float]]:
    """The partial profile's configurations: their samples' times."""
    records = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return {r["config"]: [s["time_s"] for s in r["samples"]] for r in records if "config" in r}


def test_a_stop_while_profiling_keeps_what_was_measured_and_resume_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cal"
    _stop_after_configs(monkeypatch, STOP_AFTER)
    status, err = _calibrate(out, capsys)
    assert status == 130
    assert err.splitlines()[-2] == (
        f"edgespec calibrate: interrupted while profiling the pair: {out} keeps the 3 "
        f"configurations measured so far (profile-samples.jsonl); rerun with --out {out} "
        "--resume to go on"
    )
    kept = _measured(out / "profile-samples.jsonl")
    assert sorted(kept) == [0, 1, 2]

    # the same command without --resume would measure them again: refused, saying how
    assert _calibrate(out, capsys)[1] == (
        f"edgespec calibrate: --out {out} holds the partial profile of a calibration stopped "
        "while profiling (profile-samples.jsonl, 3 configurations measured): add --resume to "
        "go on with it, or --overwrite to start over\n"
    )

    monkeypatch.setattr(fresh_profile, "_progress", lambda index, total: None)
    _stop_the_real_run(monkeypatch)  # the profile is what is checked
    status, err = _calibrate(out, capsys, "--resume")
    assert status == 130
    resumed = [line for line in err.splitlines() if line.startswith("resuming:")]
    assert len(resumed) == 1 and resumed[0].startswith("resuming: 3 of ")
    assert not (out / "profile-samples.jsonl").exists()  # the profile is written whole
    report = json.loads((out / "profile-report.json").read_text())
    times: dict[int, list[float]] = {}
    for sample in report["samples"]:
        times.setdefault(sample["config"], []).append(sample["time_s"])
    assert {config: times[config] for config in kept} == kept  # not measured again
    assert len(times) > STOP_AFTER


def test_a_resume_with_other_settings_is_refused_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cal"
    _stop_after_configs(monkeypatch, 1)
    assert _calibrate(out, capsys)[0] == 130
    status, err = _calibrate(out, capsys, "--resume", "--runs", "2")
    assert status == 2
    assert err.splitlines()[-1] == (
        f"edgespec calibrate: --resume: {out}/profile-samples.jsonl was written by a profile "
        "with other settings: grid.runs (checkpoint 1, now 2). Run with the same settings, or "
        "--overwrite in place of --resume to start over"
    )
    assert sorted(_measured(out / "profile-samples.jsonl")) == [0]  # kept


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--resume"], "--resume needs --out: the folder of the calibration stopped while "
         "profiling"),
        (["--resume", "--out", "{out}", "--profile", "p.yaml"], "--resume goes on with the "
         "partial profile in --out; --profile reads a finished one: give one of them"),
        (["--resume", "--out", "{out}", "--overwrite"], "--resume goes on with the partial "
         "profile in --out; --overwrite would remove it: give one of them"),
        (["--resume", "--out", "{out}"], "--resume: --out {out} holds no partial profile "
         "(profile-samples.jsonl): a calibration stopped while profiling keeps one there"),
    ],
    ids=["no-out", "profile", "overwrite", "nothing-to-resume"],
)  # fmt: skip
def test_a_resume_that_cannot_go_on_is_refused_before_anything_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    out = str(tmp_path)
    argv = ["calibrate", *SIZES, *(flag.format(out=out) for flag in flags)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"edgespec calibrate: {said.format(out=out)}\n"


def test_a_stop_while_timing_the_draft_batched_keeps_its_cells_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every configuration measured and 2 of the draft's batch cells timed: the resumed
    run measures no configuration and times only the other cells (each cell is kept as it
    is timed, before its progress line)."""
    out = tmp_path / "cal"
    timed: list[tuple[int, int]] = []
    stop_at = [2]  # the first run stops at its second cell; the rerun never
    say = fresh_profile.DraftCellLines.__call__

    def cell_line(lines: Any, cell: tuple[int, int], found: object) -> None:
        timed.append(cell)
        if len(timed) in stop_at:
            raise KeyboardInterrupt
        say(lines, cell, found)

    monkeypatch.setattr(fresh_profile.DraftCellLines, "__call__", cell_line)
    status, err = _calibrate(out, capsys)
    assert status == 130
    measured = len(_measured(out / "profile-samples.jsonl"))
    assert f"keeps the {measured} configurations measured so far" in err.splitlines()[-2]
    first, stop_at[:] = list(timed), []
    timed.clear()
    _stop_the_real_run(monkeypatch)
    status, err = _calibrate(out, capsys, "--resume")
    assert status == 130
    assert f"resuming: {measured} of {measured} configurations already measured" in err
    assert "profiled" not in err  # no configuration measured again
    assert len(first) == 2 and timed and not set(first) & set(timed)
    assert (out / "profile.yaml").is_file() and not (out / "profile-samples.jsonl").exists()
