"""tools/gpu_check.sh --dry-run: every step runs on the CPU in tiny sizes with the project's
interpreter, each outcome is summarized, the grid JSON lands in $OUT; a failing step is
reported and the exit status says so; GPU_WHEELS's wheels reach every step.
tools/gpu_wheels.sh --list: constraints.txt's pins of the packages the device needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "gpu_check.sh"
MARKER = "gpu_check test wheel imported"


def _marker_wheel(folder: Path) -> Path:
    """A wheel holding a ``sitecustomize`` that prints :data:`MARKER`: every interpreter
    started with the wheel's install folder on PYTHONPATH says so."""
    folder.mkdir()
    info = "marker_probe-1.0.dist-info"
    with zipfile.ZipFile(folder / "marker_probe-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("sitecustomize.py", f"print({MARKER!r})\n")
        wheel.writestr(
            f"{info}/METADATA", "Metadata-Version: 2.1\nName: marker-probe\nVersion: 1.0\n"
        )
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/RECORD", "")
    return folder


def _dry_run(out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "--dry-run"],
        env=os.environ | {"PYTHON": sys.executable, "OUT": str(out)} | env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _summary(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    return lines[lines.index("=== gpu_check summary (dry run, CPU)") + 1 :]


def _steps(summary: list[str]) -> list[str]:
    """The summary lines without their timings."""
    return [line.split(" (")[0] for line in summary]


def test_the_dry_run_passes_every_step_and_writes_the_grid(tmp_path: Path) -> None:
    wheels = _marker_wheel(tmp_path / "wheels")
    done = _dry_run(tmp_path, GPU_WHEELS=str(wheels))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = _summary(done.stdout)
    assert _steps(summary) == [
        "gpu_check: info: ok",
        "gpu_check: exactness: ok",
        "gpu_check: lossless: ok",
        "gpu_check: grid: ok",
        f"gpu_check: 0 step(s) failed; grid JSON in {tmp_path}",
    ]
    assert "cuda available: " in done.stdout
    assert " tests collected" in done.stdout  # the lossless tests are collected, not run
    assert "device_check tiny-llama on cpu float32: exact: passed" in done.stdout
    assert done.stdout.count(MARKER) >= 4  # the wheel is on every step's path
    grid = json.loads((tmp_path / "verify-grid-dry.json").read_text())
    assert (grid["device"], grid["shape"]["name"], grid["complete"]) == ("cpu", "tiny", True)
    assert len(grid["rows"]) == 16 and grid["exact_over_lossy"]["num_points"] == 8


def test_failing_steps_are_reported_and_the_rest_still_run(tmp_path: Path) -> None:
    done = _dry_run(tmp_path, PYTHON="false")
    assert done.returncode == 1
    assert _steps(_summary(done.stdout)) == [
        "gpu_check: info: FAILED",
        "gpu_check: exactness: FAILED",
        "gpu_check: lossless: FAILED",
        "gpu_check: grid: FAILED",
        f"gpu_check: 4 step(s) failed; grid JSON in {tmp_path}",
    ]
    assert "gpu_check: grid: FAILED (exit 1, " in done.stdout


def test_a_step_over_its_limit_is_stopped_and_reported(tmp_path: Path) -> None:
    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    limits = {f"TIMEOUT_{s}_S": "1" for s in ("INFO", "EXACTNESS", "LOSSLESS", "GRID")}
    done = _dry_run(tmp_path, PYTHON=str(slow), **limits)
    assert done.returncode == 1
    assert "gpu_check: lossless: FAILED (timed out after 1 s)" in _summary(done.stdout)


def test_wheels_that_do_not_install_stop_the_check_before_any_step(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = _dry_run(tmp_path, GPU_WHEELS=str(tmp_path / "empty"))
    assert done.returncode == 2
    assert f"gpu_check: installing {tmp_path / 'empty'}/*.whl failed" in done.stderr
    assert "=== gpu_check: info" not in done.stdout


def test_gpu_wheels_lists_the_pins_of_constraints_txt() -> None:
    done = subprocess.run(
        [str(ROOT / "tools" / "gpu_wheels.sh"), "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    pins = {
        line
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line.split("==")[0].lower() in ("grpcio", "protobuf", "transformers")
    }
    assert set(done.stdout.split()) == pins and len(pins) == 3
