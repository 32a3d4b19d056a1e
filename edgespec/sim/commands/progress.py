"""Progress bars of the ``sim`` commands' long runs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable


def lazy_bar(stack: contextlib.ExitStack, label: str) -> Callable[[int, int], None]:
    """A progress callback whose bar starts at its first call, once the shards are planned
    (a scenario refused before prints its error alone, not after the bar's blank line), on
    stderr: stdout keeps the tables."""
    from rich.console import Console
    from rich.progress import Progress, TaskID

    started: list[tuple[Progress, TaskID]] = []

    def show(done: int, total: int) -> None:
        if not started:
            bar = stack.enter_context(
                Progress(console=Console(stderr=True, markup=False), transient=True)
            )
            started.append((bar, bar.add_task(label, total=None)))
        bar, task = started[0]
        bar.update(task, completed=done, total=total)

    return show
