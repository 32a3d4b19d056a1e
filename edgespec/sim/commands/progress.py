"""Progress bars of the ``sim`` commands' long runs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from edgespec.sweeps.progress import progress_bar


def lazy_bar(stack: contextlib.ExitStack, label: str) -> Callable[[int, int], None]:
    """A progress callback whose bar starts at its first call, once the shards are planned
    (a scenario refused before prints its error alone, not after the bar's blank line), on
    stderr: stdout keeps the tables (:func:`~edgespec.sweeps.progress.progress_bar`: lines
    when stderr is no terminal)."""
    started: list[tuple[Any, Any]] = []

    def show(done: int, total: int) -> None:
        if not started:
            bar = stack.enter_context(progress_bar(True, transient=True))
            started.append((bar, bar.add_task(label, total=None)))
        bar, task = started[0]
        bar.update(task, completed=done, total=total)

    return show
