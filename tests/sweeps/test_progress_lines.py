"""Progress where stderr is not a terminal (a log, ``nohup``, CI): rich draws nothing until
the end there, so :class:`ProgressLines` writes plain lines as a task moves."""

from __future__ import annotations

import io

import pytest

from edgespec.sweeps.progress import LINE_EVERY_S, LINE_GAP_S, ProgressLines, progress_bar


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_a_line_at_the_start_at_every_tenth_and_at_the_end() -> None:
    out, clock = io.StringIO(), Clock()
    with ProgressLines(out, clock) as bar:
        task = bar.add_task("zhu draws", total=20)
        for _ in range(20):
            clock.now_s += 3.0
            bar.advance(task)
    lines = out.getvalue().splitlines()
    assert lines[0] == "zhu draws: 0/20 (0 s)"
    assert lines[1:3] == ["zhu draws: 2/20 (6 s)", "zhu draws: 4/20 (12 s)"]
    assert lines[-1] == "zhu draws: 20/20 (60 s)"
    assert len(lines) == 11  # 0, then each of ten tenths


def test_a_slow_task_says_it_is_alive_every_minute() -> None:
    out, clock = io.StringIO(), Clock()
    bar = ProgressLines(out, clock)
    task = bar.add_task("dsd runs", total=1000)
    clock.now_s += LINE_EVERY_S - 1
    bar.advance(task)  # within the minute, the same tenth: no line
    clock.now_s += 2
    bar.update(task, description="dsd: done s4", advance=1)
    assert out.getvalue().splitlines() == [
        "dsd runs: 0/1,000 (0 s)",
        "dsd: done s4: 2/1,000 (61 s)",
    ]


def test_without_a_terminal_the_lines_are_chosen(capsys: pytest.CaptureFixture[str]) -> None:
    assert isinstance(progress_bar(True), ProgressLines)  # pytest's captured stderr
    assert not isinstance(progress_bar(False), ProgressLines)  # disabled: rich's, silent


def test_a_task_of_a_second_says_its_start_and_its_end_only() -> None:
    """A tenth's line waits LINE_GAP_S after the last (a 0.5 s `make demo` in a log wrote
    eleven lines); the end is said at once."""
    out, clock = io.StringIO(), Clock()
    with ProgressLines(out, clock) as bar:
        task = bar.add_task("simulating default (simulated s)", total=60)
        for _ in range(10):
            clock.now_s += 0.05
            bar.advance(task, 6)
    assert out.getvalue().splitlines() == [
        "simulating default (simulated s): 0/60 (0 s)",
        "simulating default (simulated s): 60/60 (0 s)",
    ]


def test_tenths_closer_than_the_gap_wait_for_it() -> None:
    out, clock = io.StringIO(), Clock()
    bar = ProgressLines(out, clock)
    task = bar.add_task("sweep", total=10)
    for _ in range(4):
        clock.now_s += LINE_GAP_S / 2
        bar.advance(task)  # a tenth each, a line every other one
    assert out.getvalue().splitlines() == [
        "sweep: 0/10 (0 s)",
        f"sweep: 2/10 ({LINE_GAP_S:.0f} s)",
        f"sweep: 4/10 ({2 * LINE_GAP_S:.0f} s)",
    ]
