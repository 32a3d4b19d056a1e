"""Progress of long sweeps and reproductions, on stderr (stdout keeps the tables): a rich
bar on a terminal; elsewhere (a log file, ``nohup``, CI) rich draws nothing until the end,
so :class:`ProgressLines` writes one plain line as each task starts, at every tenth of it
(at most one each :data:`LINE_GAP_S` seconds: a run of a second writes two lines, not
eleven) and at least every :data:`LINE_EVERY_S` seconds while it moves, and when it is
done; :meth:`ProgressLines.print` (rich's ``Progress.print``) says a line at once."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

LINE_EVERY_S = 60.0
"""The longest a moving task goes without a line when stderr is not a terminal."""

LINE_GAP_S = 5.0
"""The shortest time between a task's lines at its tenths (its start and end are always said)."""


@dataclass(slots=True)
class _Task:
    description: str
    total: int | None
    done: int = 0
    shown_tenth: int = -1
    shown_s: float = 0.0


class ProgressLines:
    """The subset of rich's ``Progress`` the sweeps and reproductions use (``add_task``,
    ``advance``, ``update``, a context manager), as lines: ``DESCRIPTION: done/total
    (elapsed s)``. ``clock`` and ``stream`` are passed in (tests)."""

    def __init__(
        self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._start_s = clock()
        self._tasks: list[_Task] = []

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float | None = None, **_: Any) -> int:
        self._tasks.append(_Task(description, None if total is None else int(total)))
        self._show(self._tasks[-1])
        return len(self._tasks) - 1

    def print(self, text: str) -> None:
        """A line of its own, at once (rich's ``Progress.print``: above the bar)."""
        print(text, file=self._stream, flush=True)

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def update(
        self,
        task_id: int,
        *,
        description: str | None = None,
        advance: float | None = None,
        completed: float | None = None,
        total: float | None = None,
        **_: Any,
    ) -> None:
        task = self._tasks[task_id]
        task.description = task.description if description is None else description
        task.total = task.total if total is None else int(total)
        task.done = int(completed) if completed is not None else task.done + int(advance or 0)
        self._show(task)

    def _show(self, task: _Task) -> None:
        now = self._clock()
        tenth = task.done * 10 // task.total if task.total else 0
        finished = task.total is not None and task.done >= task.total
        if not _due(task, tenth, finished, now - task.shown_s):
            return
        task.shown_tenth, task.shown_s = (10 if finished else tenth), now
        of = "" if task.total is None else f"/{task.total:,}"
        line = f"{task.description}: {task.done:,}{of} ({now - self._start_s:.0f} s)"
        print(line, file=self._stream, flush=True)


def _due(task: _Task, tenth: int, finished: bool, since_s: float) -> bool:
    """Whether ``task`` gets a line now: its start and its end once; a new tenth when
    :data:`LINE_GAP_S` has passed since its last line; any change after :data:`LINE_EVERY_S`."""
    if finished:
        return task.shown_tenth != 10
    if task.shown_tenth < 0 or since_s >= LINE_EVERY_S:
        return True
    return tenth != task.shown_tenth and since_s >= LINE_GAP_S


def progress_bar(enabled: bool, transient: bool = False) -> Any:
    """Progress on stderr, used as a context manager: a rich ``Progress`` when stderr is a
    terminal (``transient``: gone when done), :class:`ProgressLines` when it is not (a log
    file gets a line each tenth, at most each :data:`LINE_GAP_S`, and every
    :data:`LINE_EVERY_S` at least); disabled when not
    ``enabled``."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    if enabled and not sys.stderr.isatty():
        return ProgressLines()
    return Progress(
        TextColumn("{task.description}", style="progress.description", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True, markup=False),
        disable=not enabled,
        transient=transient,
    )
