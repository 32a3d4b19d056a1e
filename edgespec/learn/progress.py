"""One Rich progress bar for the ``edgespec train``, ``trace`` and ``data`` stages: a
description, the bar, done/total and the elapsed time, on stderr."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Update = Callable[..., None]
"""``update(completed=..., total=..., description=..., advance=..., **fields)``: Rich's
``Progress.update`` for the one task of the bar."""


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
    function. ``remaining`` adds the estimated time left; ``info`` a trailing
    ``{task.fields[info]}`` column (starts empty)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if elapsed:
        columns.append(TimeElapsedColumn())
    if remaining:
        columns.append(TimeRemainingColumn())
    if info:
        columns.append(TextColumn("{task.fields[info]}"))
    with Progress(*columns, console=console) as progress:
        fields: dict[str, Any] = {"info": ""} if info else {}
        task = progress.add_task(description, total=total, **fields)

        def update(**changes: Any) -> None:
            progress.update(task, **changes)

        yield update
