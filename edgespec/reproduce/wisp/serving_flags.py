"""The flags of ``edgespec reproduce wisp-serving`` that need more than a type: the run's
length and the SLO classes (``--classes NAME=TOKENS_PER_S``), checked as they are parsed."""

from __future__ import annotations

import argparse
import math

from edgespec.argument_types import seconds_at_most
from edgespec.errors import UserInputError

MAX_SECONDS = 3_600
"""The longest closed-loop run per system ``--seconds`` asks for (one hour; three systems
run one after another, each client keeping every request's row in memory)."""


run_seconds = seconds_at_most(MAX_SECONDS)
"""``--seconds``: a finite number of seconds > 0, at most :data:`MAX_SECONDS`."""


def slo_class(text: str) -> str:
    """A ``--classes`` entry: ``NAME=TOKENS_PER_S``, the name non-empty without ``.`` or
    ``=`` (as ``serve --slo-class`` takes it), the target a finite number > 0; returned as
    ``NAME=TOKENS_PER_S`` with the spaces around either part dropped."""
    name, _, value = (part.strip() for part in text.partition("="))
    try:
        target = float(value)
    except ValueError:
        target = math.nan
    if not name or "." in name or not math.isfinite(target) or target <= 0:
        raise argparse.ArgumentTypeError(
            f"expected NAME=TOKENS_PER_S (a finite number > 0; no '.' or '=' in the name), "
            f"got {text!r}"
        )
    return f"{name}={value}"


def class_targets(entries: list[str]) -> dict[str, float]:
    """``--classes`` (checked by :func:`slo_class`) as name → target; a name given twice
    is refused (the later target silently won)."""
    names = [entry.split("=")[0] for entry in entries]
    if twice := next((n for n in names if names.count(n) > 1), None):
        raise UserInputError(f"--classes: {twice!r} is given more than once (one target each)")
    return {n: float(entry.split("=")[1]) for n, entry in zip(names, entries, strict=True)}
