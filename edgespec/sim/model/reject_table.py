"""A WISV decision head's measured reject shares, as the simulator reads them.

``edgespec train wisv`` writes the Gemma 3 270M pair's (``edgespec/data/wisv/<name>-
acceptance.json``): the share of held-out mismatches the head rejects at each threshold
0..16 on a poor and on a good channel. :meth:`RejectShareTable.share` reads it at T
(linear between thresholds) and at a device's channel quality κ
(:class:`edgespec.policies.semantic.csi.ChannelState`, from its link's uplink rate, loss
rate and RTT), linear in κ between the two channels' κ and held at the nearer channel's
share outside them. A table may say how many held-out mismatches its shares come from
(``mismatches``: what a share's standard error needs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

from edgespec.config import ConfigError, as_written, at_field, read_text
from edgespec.policies.semantic.csi import ChannelState

TRAIN_COMMAND = "edgespec train wisv"
"""What writes the bundled Gemma 3 270M table."""


@dataclass(frozen=True, slots=True)
class RejectShareTable:
    """A head's measured reject shares: ``shares[c][i]`` at ``thresholds[i]`` on channel
    ``c`` (0 = poor, 1 = good) of quality ``qualities[c]`` (κ_poor < κ_good), measured on
    ``num_mismatches`` held-out mismatches (``None``: the table does not say)."""

    source: str
    thresholds: tuple[float, ...]
    qualities: tuple[float, float]
    shares: tuple[tuple[float, ...], tuple[float, ...]]
    num_mismatches: int | None = None

    def __post_init__(self) -> None:
        xs = self.thresholds
        if len(xs) < 2 or any(b <= a for a, b in pairwise(xs)):
            raise ValueError("thresholds must be >= 2 strictly increasing numbers")
        for row in self.shares:
            if len(row) != len(xs):
                raise ValueError(f"{len(row)} reject shares for {len(xs)} thresholds")
            if any(not 0.0 <= v <= 1.0 for v in row):
                raise ValueError("every reject share must be in [0, 1]")
        poor, good = self.qualities
        if not poor < good:
            raise ValueError(f"the poor channel's quality {poor} is not below the good's {good}")
        if self.num_mismatches is not None and self.num_mismatches < 1:
            raise ValueError(f"mismatches must be a whole number >= 1, got {self.num_mismatches}")

    def share_at(self, channel: int, threshold: float) -> float:
        """Channel ``channel``'s share at ``threshold``, linear between the table's
        thresholds (outside them: an error)."""
        xs, ys = self.thresholds, self.shares[channel]
        if not xs[0] <= threshold <= xs[-1]:
            raise ValueError(f"threshold {threshold} outside the table's [{xs[0]}, {xs[-1]}]")
        for i in range(1, len(xs)):
            if threshold <= xs[i]:
                w = (threshold - xs[i - 1]) / (xs[i] - xs[i - 1])
                return ys[i - 1] + w * (ys[i] - ys[i - 1])
        return ys[-1]  # pragma: no cover - the loop returns at xs[-1]

    def share(self, quality: float, threshold: float) -> float:
        """The reject share at channel quality κ = ``quality`` and ``threshold``: linear in
        κ between the two channels, the nearer channel's share outside them."""
        poor_q, good_q = self.qualities
        w = min(1.0, max(0.0, (quality - poor_q) / (good_q - poor_q)))
        poor, good = self.share_at(0, threshold), self.share_at(1, threshold)
        return poor + w * (good - poor)


def tables_dir() -> Path:
    """Where the bundled reject-share tables are: ``edgespec/data/wisv/``."""
    return Path(str(resources.files("edgespec") / "data" / "wisv"))


def table_path(name: str) -> Path:
    """The file a ``table`` names: a path (``.json`` or with a folder) as given, else
    ``edgespec/data/wisv/<name>-acceptance.json``, else ``.../<name>.json``."""
    path = Path(name)
    if path.suffix == ".json" or len(path.parts) > 1:
        return path
    bundled = tables_dir() / f"{name}-acceptance.json"
    plain = tables_dir() / f"{name}.json"
    return plain if not bundled.is_file() and plain.is_file() else bundled


def _channel_quality(entry: Any, where: str) -> float:
    """κ of a table's channel: its ``quality``, else from ``uplink_mbps`` (or
    ``uplink_bps``) with ``per`` and ``rtt_ms`` as the head's CSI features build it."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {as_written(entry)}")
    if "quality" in entry:
        return float(entry["quality"])
    if "uplink_bps" in entry:
        rate = float(entry["uplink_bps"])
    elif "uplink_mbps" in entry:
        rate = float(entry["uplink_mbps"]) * 1e6
    else:
        raise ValueError(f"{where}: needs quality, uplink_mbps or uplink_bps")
    per = float(entry.get("per", 0.0))
    rtt = float(entry.get("rtt_ms", 0.0)) / 1000.0
    return ChannelState(rate, per, rtt).quality


def parse_reject_table(data: Any, source: str) -> RejectShareTable:
    """A table from its JSON object: ``thresholds`` (0..16), ``channels`` (``poor`` and
    ``good``: each a ``quality`` κ or ``uplink_mbps`` [+ ``per``, ``rtt_ms``]) and
    ``reject_share`` (``poor`` and ``good``: one share per threshold); optionally
    ``mismatches``, how many held-out mismatches the shares come from."""
    if not isinstance(data, Mapping):
        raise ValueError("expected a JSON object")
    try:
        thresholds = tuple(float(x) for x in data["thresholds"])
        channels, shares = data["channels"], data["reject_share"]
        qualities = (
            _channel_quality(channels["poor"], "channels.poor"),
            _channel_quality(channels["good"], "channels.good"),
        )
        rows = (
            tuple(float(x) for x in shares["poor"]),
            tuple(float(x) for x in shares["good"]),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"missing or malformed {exc}: needs thresholds, channels.poor/good and "
            "reject_share.poor/good"
        ) from exc
    return RejectShareTable(source, thresholds, qualities, rows, _mismatches(data))


def _mismatches(data: Mapping[str, Any]) -> int | None:
    """A table's ``mismatches`` (absent: ``None``), a whole number."""
    if "mismatches" not in data:
        return None
    value = data["mismatches"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"mismatches must be a whole number >= 1, got {as_written(value)}")
    return value


def load_reject_table(name: str, field: str = "verification.table") -> RejectShareTable:
    """The table ``name`` names (:func:`table_path`); errors at ``field``."""
    path = table_path(name)
    if not path.exists():  # a folder or a device: read_text says which
        raise ConfigError(
            field,
            f"no reject-share table {name!r} ({path} does not exist); `{TRAIN_COMMAND}` "
            "writes the Gemma 3 270M head's, edgespec/data/wisv/gemma3-270m-acceptance.json",
        )
    try:
        text = read_text(path, "reject-share table")  # UTF-8, else named: not a traceback
    except ConfigError as exc:
        raise at_field(exc, field) from exc
    try:
        return parse_reject_table(json.loads(text), str(path))
    except ValueError as exc:  # json.JSONDecodeError is one
        raise ConfigError(field, f"{path}: {exc}") from exc
    except RecursionError:  # arrays nested past Python's recursion limit
        raise ConfigError(field, f"{path}: nested too deeply") from None
