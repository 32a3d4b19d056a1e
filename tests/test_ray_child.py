"""tests/ray_child.py: a child past its time is killed with its whole process group and
named; a Ray child that timed out runs once more, one that ended is never rerun."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ray_child import REPO, ChildTimeout, run_child, run_ray_child

SLEEPER = (
    "import subprocess, sys, time; "
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
    "open(sys.argv[1], 'w').write(str(p.pid)); "
    "print('started', flush=True); print('on stderr', file=sys.stderr, flush=True); "
    "time.sleep(60)"
)
"""A child that starts a grandchild (as a Ray driver starts its raylet), writes the
grandchild's pid to ``argv[1]`` and sleeps."""


def _gone(pid: int) -> bool:
    """The process has exited (a zombie not yet reaped by its dead parent's init counts)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_a_child_past_its_time_is_killed_with_its_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    start = time.monotonic()
    with pytest.raises(ChildTimeout) as raised:
        run_child(["-c", SLEEPER, str(pid_file)], timeout_s=2.0)
    assert time.monotonic() - start < 20.0
    assert str(raised.value).startswith(f"python -c {SLEEPER} {pid_file} ran past 2 s and was")
    assert str(raised.value).endswith("its stderr ended:\non stderr\n")
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5.0
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild)


def test_a_child_that_ends_is_returned_as_it_ended() -> None:
    run = run_child(["-c", "import sys; print('out'); sys.exit(3)"], timeout_s=30.0)
    assert (run.returncode, run.stdout, run.stderr) == (3, "out\n", "")


def test_a_timed_out_ray_child_runs_once_more_with_the_next_arguments(tmp_path: Path) -> None:
    def args_for(attempt: int) -> list[str]:
        code = SLEEPER if attempt == 0 else "print('second')"
        return ["-c", code, str(tmp_path / "grandchild.pid")]

    attempt, run = run_ray_child(args_for, timeout_s=2.0)
    assert (attempt, run.returncode, run.stdout) == (1, 0, "second\n")


def test_a_ray_child_that_fails_is_not_run_again(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    code = f"open({str(marks)!r}, 'a').write('x'); raise SystemExit(1)"
    attempt, run = run_ray_child(lambda _: ["-c", code], timeout_s=30.0)
    assert (attempt, run.returncode, marks.read_text()) == (0, 1, "x")


def test_twice_past_its_time_names_both(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    with pytest.raises(ChildTimeout) as raised:
        run_ray_child(lambda _: ["-c", SLEEPER, str(pid_file)], timeout_s=2.0)
    one = f"python -c {SLEEPER} {pid_file} ran past 2 s and was killed;"
    one += " its stderr ended:\non stderr\n"
    assert str(raised.value) == f"twice:\n{one}\n---\n{one}"


def test_a_child_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """As when pytest-timeout ends a worker: the child (a Ray driver) must not outlive it."""
    pid_file = tmp_path / "child.pid"
    child_code = (
        "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    )
    starter_code = (
        "import sys; from tests.ray_child import run_child; "
        f"run_child(['-c', {child_code!r}, sys.argv[1]], 60.0)"
    )
    starter = subprocess.Popen([sys.executable, "-c", starter_code, str(pid_file)], cwd=REPO)
    try:
        deadline = time.monotonic() + 30.0
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert not _gone(child)
    finally:
        starter.kill()
        starter.wait()
    deadline = time.monotonic() + 5.0
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child)
