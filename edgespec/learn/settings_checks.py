"""Checks shared by the training settings of :mod:`edgespec.learn` (run in their
``__post_init__``, so a settings object built directly is checked as one built from the
command line): a bad field is a ``ValueError`` naming the field and its value, e.g.
``learning_rate must be a finite number > 0, got nan``."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from edgespec.argument_types import positive_int

__all__ = [
    "MAX_WIDTH",
    "check_at_least_one",
    "check_at_most",
    "check_dropout",
    "check_non_negative",
    "check_positive",
    "check_time_budget",
    "width_flag",
]

MAX_WIDTH = 1024
"""The widest hidden layer ``train awc`` and ``train wisv`` train (their ``--width`` and
settings): a WC-DNN's file grows with the square of the width (about 90 MB at 1024;
loading reads at most 256 MiB, about width 1,800), a WISV head's with width × inputs
(about 10 MB at 1024 for the bundled gemma3-270m pair's 900 inputs)."""


def width_flag(why_bounded: str) -> Callable[[str], int]:
    """The argparse type of a ``--width`` flag: an integer in ``[1, MAX_WIDTH]``, a wider
    one refused saying ``why_bounded``."""

    def width(text: str) -> int:
        value = positive_int(text)
        if value > MAX_WIDTH:
            raise argparse.ArgumentTypeError(f"must be <= {MAX_WIDTH} ({why_bounded}), got {value}")
        return value

    return width


def check_positive(name: str, value: float) -> None:
    """``value`` a finite number > 0 (a learning rate)."""
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


def check_non_negative(name: str, value: float) -> None:
    """``value`` a finite number >= 0 (a weight decay, a loss weight)."""
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")


def check_at_least_one(**counts: int) -> None:
    """Each count (epochs, a width, a batch size) >= 1; the first that is not is named."""
    for name, value in counts.items():
        if not value >= 1:
            raise ValueError(f"{name} must be >= 1, got {value}")


def check_at_most(name: str, value: int, limit: int) -> None:
    """``value`` (a width) at most ``limit``, the bound its command-line flag has."""
    if not value <= limit:
        raise ValueError(f"{name} must be <= {limit}, got {value}")


def check_dropout(value: float, name: str = "dropout") -> None:
    """A dropout probability: in [0, 1) (NaN is not)."""
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")


def check_time_budget(value: float | None, name: str = "time_budget_s") -> None:
    """``None`` (no budget) or a finite number of seconds > 0."""
    if value is not None:
        check_positive(name, value)
