"""What `edgespec train draft` and `train feature-draft` report as their stages run: each
stage's callback updates its progress bar, with the time the stage has left (its own
items' pace, never past its time budget: :class:`~edgespec.learn.progress.Pace`), and,
when stderr is no terminal (a log file), prints a line now and then instead."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edgespec.learn.progress import Pace, Update

if TYPE_CHECKING:  # make_draft imports torch
    from edgespec.learn.drafts.make_draft import BatchProgress, StepProgress


def no_update(**changes: Any) -> None:
    """The update of a bar not shown."""


def on_generated(console: Any, update: Update, budget_s: float | None) -> BatchProgress:
    """Generation's callback: a batch written (numbered by its shard), its seconds."""
    pace = Pace(budget_s)

    def on_batch(done: int, total: int, seconds: float) -> None:
        update(
            completed=done,
            total=total,
            description=f"generating ({seconds:.0f} s/batch)",
            ends_at=pace.ends_at(total - done),
        )
        if not console.is_terminal:
            console.print(f"batch {done}/{total} generated in {seconds:.0f} s")

    return on_batch


def on_labelled(console: Any, update: Update, budget_s: float | None) -> BatchProgress:
    """Teacher-forced labelling's callback: a batch written."""
    pace = Pace(budget_s)

    def on_batch(done: int, total: int, seconds: float) -> None:
        update(completed=done, total=total, ends_at=pace.ends_at(total - done))
        if not console.is_terminal and done % 10 == 0:
            console.print(f"batch {done}/{total} labelled ({seconds:.1f} s)")

    return on_batch


def on_step(console: Any, update: Update, budget_s: float | None) -> StepProgress:
    """Training's callback: an optimizer step, its loss and top-1 agreement."""
    pace = Pace(budget_s)

    def step_done(step: int, total: int, loss: float, agreement: float) -> None:
        description = f"training loss {loss:.3f} agree {agreement:.3f}"
        update(
            completed=step,
            total=total,
            description=description,
            ends_at=pace.ends_at(total - step),
        )
        if not console.is_terminal and step % 20 == 0:  # a log file gets a line now and then
            console.print(f"step {step}/{total} loss {loss:.3f} agreement {agreement:.3f}")

    return step_done


def shown(agreement: float, digits: int) -> str:
    """A drafting step's top-1 agreement as said, ``-`` for a step without a position."""
    return "-" if math.isnan(agreement) else f"{agreement:.{digits}f}"


def on_feature_step(
    console: Any, update: Update, budget_s: float | None
) -> Callable[[int, int, float, list[float]], None]:
    """`train feature-draft`'s training callback: a step, its loss and the top-1
    agreement of each unrolled drafting step."""
    pace = Pace(budget_s)

    def step_done(step: int, total: int, loss: float, agreement: list[float]) -> None:
        info = f"loss {loss:.3f} top-1 " + " ".join(shown(a, 2) for a in agreement)
        update(completed=step, total=total, info=info, ends_at=pace.ends_at(total - step))
        if not console.is_terminal and step % 100 == 0:
            console.print(f"step {step}/{total}: {info}")

    return step_done
