"""What the WISV rows read of a head's reject-share table besides its shares on the two
links: the shares it can give on any channel, and the rule its training labels came from.

A table (:mod:`edgespec.sim.model.reject_table`) holds a head's reject shares on two
channels and reads any other channel linearly in κ between them, the nearer one's outside:
at threshold T every channel's share lies between the two (:attr:`HeadTable.low`,
:attr:`HeadTable.high`). ``edgespec train wisv`` also records the labels' repair budget
(``budget``, a name of :data:`edgespec.policies.semantic.relabel.BUDGETS`) and the share of
held-out mismatches the labels themselves reject per channel (``label_reject_share``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.config import as_written, read_text
from edgespec.errors import UserInputError
from edgespec.sim.model.reject_table import RejectShareTable


@dataclass(frozen=True, slots=True)
class HeadTable:
    """A head's table at the run's threshold: ``channel_shares`` (poor, good) on its own
    two channels of quality ``qualities``; where it records them, its labels' repair
    ``budget`` and their reject shares ``label_shares`` (poor, good)."""

    channel_shares: tuple[float, float]
    qualities: tuple[float, float]
    budget: str | None = None
    label_shares: tuple[float, float] | None = None

    @property
    def low(self) -> float:
        """The smallest share the head gives on any channel at the threshold."""
        return min(self.channel_shares)

    @property
    def high(self) -> float:
        """The largest share the head gives on any channel at the threshold."""
        return max(self.channel_shares)

    def to_dict(self) -> dict[str, Any]:
        return {
            "channel_shares": list(self.channel_shares),
            "qualities": list(self.qualities),
            "budget": self.budget,
            "label_shares": None if self.label_shares is None else list(self.label_shares),
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> HeadTable:
        """The inverse of :meth:`to_dict`."""
        shares, qualities, labels = data["channel_shares"], data["qualities"], data["label_shares"]
        return HeadTable(
            (float(shares[0]), float(shares[1])),
            (float(qualities[0]), float(qualities[1])),
            data["budget"],
            None if labels is None else (float(labels[0]), float(labels[1])),
        )


def _labels(data: Any, path: Path) -> tuple[str | None, tuple[float, float] | None]:
    """A table's ``budget`` and ``label_reject_share`` (poor, good), each ``None`` where
    the table does not record it; a :class:`UserInputError` naming the file and the field
    where one is malformed."""
    if not isinstance(data, Mapping):
        raise UserInputError(f"{path}: expected a JSON object")
    budget = data.get("budget")
    if budget is not None and not isinstance(budget, str):
        raise UserInputError(f"{path}: budget must be a name, got {as_written(budget)}")
    shares = data.get("label_reject_share")
    if shares is None:
        return budget, None
    try:
        pair = (float(shares["poor"]), float(shares["good"]))
    except (KeyError, TypeError, ValueError):
        raise UserInputError(
            f"{path}: label_reject_share must hold numbers poor and good, got {as_written(shares)}"
        ) from None
    if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in pair):
        raise UserInputError(
            f"{path}: label_reject_share must be in [0, 1], got {as_written(shares)}"
        )
    return budget, pair


def head_table(path: Path, table: RejectShareTable, threshold: float) -> HeadTable:
    """``table`` (read from ``path``) at ``threshold``, with the labels' rule its file
    records (module docstring)."""
    text = read_text(path, "reject-share table")  # bounded; its own error names the file
    try:
        data = json.loads(text)
    except ValueError as exc:  # read by load_reject_table already: changed since
        raise UserInputError(f"{path}: not JSON: {exc}") from None
    budget, labels = _labels(data, path)
    shares = (table.share_at(0, threshold), table.share_at(1, threshold))
    return HeadTable(shares, table.qualities, budget, labels)
