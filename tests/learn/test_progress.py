"""The time left on `edgespec train draft`'s and `train feature-draft`'s progress bars
(they showed none): each long loop's items at the pace of those done in this run, never
past its time budget (:class:`~edgespec.learn.progress.Pace`), counted down on the bar."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
from rich.console import Console

from edgespec.learn.progress import progress_bar


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_pace_of_this_runs_items_capped_by_the_budget() -> None:
    from edgespec.learn.progress import Pace

    clock = _Clock()
    pace = Pace(budget_s=100.0, clock=clock)
    clock.now += 4.0
    assert pace.ends_at(2) == 1000.0 + 4.0 + 2 * 4.0  # 4 s an item, 2 left
    clock.now += 6.0
    assert pace.ends_at(3) == 1010.0 + 3 * 5.0  # 5 s an item on average now
    clock.now += 10.0
    assert pace.ends_at(50) == 1000.0 + 100.0  # the budget ends the loop first
    clock.now = 1200.0
    assert pace.ends_at(5) == 1200.0  # past it: the loop stops after this item


def test_a_resumed_runs_items_done_before_take_no_time() -> None:
    """A resumed generation's first batch is shard 51 of 100: 5 s for one batch, not 51."""
    from edgespec.learn.progress import Pace

    clock = _Clock()
    pace = Pace(clock=clock)
    clock.now += 5.0
    assert pace.ends_at(100 - 51) == 1005.0 + 49 * 5.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-:--:-- left"),
        (754.4, "0:12:34 left"),
        (3 * 3600 + 5, "3:00:05 left"),
        (-3, "0:00:00 left"),
    ],
)
def test_time_left_text(seconds: float | None, text: str) -> None:
    from edgespec.learn.progress import time_left_text

    assert time_left_text(seconds) == text


def test_the_bar_counts_the_time_left_down() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with progress_bar(console, "training", 10, remaining=True) as update:
        update(completed=1, ends_at=time.monotonic() + 754.0)
    shown = out.getvalue()
    assert "1/10" in shown and ("0:12:34 left" in shown or "0:12:33 left" in shown)


def _recorded() -> tuple[list[dict[str, Any]], Any]:
    updates: list[dict[str, Any]] = []

    def update(**changes: Any) -> None:
        updates.append(changes)

    return updates, update


def test_each_stage_of_the_draft_commands_reports_its_time_left() -> None:
    from edgespec.learn.drafts import draft_progress

    console = Console(file=io.StringIO(), force_terminal=False)
    updates, update = _recorded()
    start = time.monotonic()
    draft_progress.on_generated(console, update, 60.0)(51, 100, 2.0)
    draft_progress.on_labelled(console, update, 60.0)(3, 10, 1.0)
    draft_progress.on_step(console, update, 60.0)(5, 40, 1.5, 0.3)
    draft_progress.on_feature_step(console, update, None)(40, 40, 1.5, [0.5, 0.25])
    end = time.monotonic()
    assert [u["completed"] for u in updates] == [51, 3, 5, 40]
    assert [u["total"] for u in updates] == [100, 10, 40, 40]
    for changes in updates[:3]:  # within each stage's budget of 60 s
        assert start <= changes["ends_at"] <= end + 60.0
    assert updates[3]["ends_at"] <= end  # no step left


def test_a_trainers_epochs_are_said_a_line_a_tenth_without_a_terminal() -> None:
    """``train awc`` and ``train wisv`` were silent for minutes: a bar over the epochs, and
    in a log a line at each tenth of them (the last one always)."""
    from edgespec.learn.progress import epoch_progress

    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    with epoch_progress(console, 25) as on_epoch:
        for epoch in range(1, 26):
            on_epoch(epoch, 1.0 / epoch)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("epoch")]
    said = [*range(2, 25, 2), 25]
    assert lines == [f"epoch {n}/25: loss {1.0 / n:.4f}" for n in said]
    shown = io.StringIO()
    terminal = Console(file=shown, force_terminal=True, width=120, color_system=None)
    with epoch_progress(terminal, 4) as on_epoch:
        on_epoch(1, 0.5)
    assert "training" in shown.getvalue() and "1/4" in shown.getvalue()
    assert "loss 0.5000" in shown.getvalue() and "epoch 1/4" not in shown.getvalue()
