"""The words every paper's list of what its ``--quick`` run leaves out uses (REPORT.md's
closing section, :func:`~edgespec.reproduce.report_file.left_out_markdown`, and the list
under the printed table): each paper reads its items off its quick plan against its full
one with these, so a plan that changes is described as it is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def and_list(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[-1] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def numbers(values: Sequence[float], unit: str = "") -> str:
    """``10, 60 and 120 ms``: ``values`` as :func:`and_list` of ``:g``, then ``unit``."""
    return and_list([f"{v:g}" for v in values]) + (f" {unit}" if unit else "")


def count(n: int, noun: str) -> str:
    """``1 trial``, ``4 trials``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def missing(full: Sequence[T], run: Sequence[T]) -> list[T]:
    """The values of the full plan's ``full`` that the quick plan's ``run`` does not have."""
    return [v for v in full if v not in run]


def not_run(claims_at: str, left: str, kept: str, about: str = "") -> str:
    """``W8 at N = 4 and 8 (about): not run, only N = 2 and 16``: ``claims_at`` (the claims
    and a preposition) the values ``left`` out, ``about`` what they would show, then the
    values ``kept`` (none: not run at all)."""
    about = f" ({about})" if about else ""
    return f"{claims_at} {left}{about}: not run" + (f", only {kept}" if kept else "")


def cut(what: str, run: int, full: int, noun: str) -> str:
    """``W6's MLP search: 1 trial (full: 8)``: ``what``, then the quick plan's count of
    ``noun`` beside the full plan's."""
    return f"{what} {count(run, noun)} (full: {full})"
