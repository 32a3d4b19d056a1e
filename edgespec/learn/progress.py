"""One Rich progress bar for the ``edgespec train``, ``trace`` and ``data`` stages: a
description, the bar, done/total, the elapsed time and, where the total is known, the time
left, on stderr. A loop with a time budget estimates its time left with a :class:`Pace`
(its own items' pace, capped by the budget), which the bar counts down."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Update = Callable[..., None]
"""``update(completed=..., total=..., description=..., advance=..., **fields)``: Rich's
``Progress.update`` for the one task of the bar."""


class Pace:
    """When a loop of items will end: the items it has left at the mean pace of those done
    in this run (items a resumed run found done are not counted: they took no time now),
    but no later than its time budget (``budget_s`` from when the pace starts; ``None``:
    none), after which the loop stops. Times are ``clock()`` values."""

    __slots__ = ("budget_s", "clock", "done", "start_s")

    def __init__(
        self, budget_s: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.budget_s = budget_s
        self.clock = clock
        self.start_s = clock()
        self.done = 0

    def ends_at(self, left: int) -> float:
        """One more item done in this run, ``left`` still to do: when the loop should end
        (a ``clock()`` value, never before now)."""
        self.done += 1
        now = self.clock()
        end = now + (now - self.start_s) / self.done * max(left, 0)
        if self.budget_s is not None:
            end = min(end, self.start_s + self.budget_s)
        return max(end, now)


def time_left_text(seconds: float | None) -> str:
    """``0:12:34 left``; ``-:--:-- left`` while unknown (no total, nothing done yet)."""
    if seconds is None:
        return "-:--:-- left"
    minutes, secs = divmod(max(0, round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d} left"


def _time_left_column() -> Any:
    """A column of the task's time left: its ``ends_at`` field (a ``time.monotonic()``
    value, from a :class:`Pace`) counted down, else Rich's estimate from its speed."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class TimeLeftColumn(ProgressColumn):
        max_refresh = 0.5

        def render(self, task: Task) -> Text:
            ends_at = task.fields.get("ends_at")
            left = task.time_remaining if ends_at is None else ends_at - time.monotonic()
            return Text(time_left_text(left), style="progress.remaining")

    return TimeLeftColumn()


@contextmanager
def progress_bar(
    console: Any,
    description: str,
    total: int | None = None,
    *,
    elapsed: bool = True,
    remaining: bool = False,
    info: bool = False,
) -> Iterator[Update]:
    """A live bar named ``description`` (``total`` None: unknown yet); yields its update
    function. ``remaining`` adds the estimated time left (``update(ends_at=...)``: a
    :meth:`Pace.ends_at`; else from the bar's speed); ``info`` a trailing
    ``{task.fields[info]}`` column (starts empty)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns: list[Any] = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if elapsed:
        columns.append(TimeElapsedColumn())
    if remaining:
        columns.append(_time_left_column())
    if info:
        columns.append(TextColumn("{task.fields[info]}"))
    with Progress(*columns, console=console) as progress:
        fields: dict[str, Any] = {"info": ""} if info else {}
        task = progress.add_task(description, total=total, **fields)

        def update(**changes: Any) -> None:
            progress.update(task, **changes)

        yield update


EpochDone = Callable[[int, float], None]
"""``on_epoch(epochs_done, mean_loss)``: a trainer's report after each epoch."""


@contextmanager
def epoch_progress(console: Any, epochs: int) -> Iterator[EpochDone]:
    """A ``training`` bar over ``epochs`` (time left, the last epoch's loss) for a trainer
    that calls the yielded :data:`EpochDone` after each epoch (``train awc``, ``train
    wisv``: minutes without a word before); with stderr not a terminal, a line at each
    tenth of the epochs instead of a redrawn bar. A run that stops early (early stopping)
    leaves the bar where it stopped."""
    pace = Pace()
    every = max(1, epochs // 10)
    with progress_bar(console, "training", epochs, remaining=True, info=True) as update:

        def on_epoch(done: int, loss: float) -> None:
            info = f"loss {loss:.4f}"
            update(completed=done, info=info, ends_at=pace.ends_at(epochs - done))
            if not console.is_terminal and (done % every == 0 or done == epochs):
                console.print(f"epoch {done}/{epochs}: {info}")

        yield on_epoch
