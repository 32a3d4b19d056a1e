"""The channel-state (CSI) features the WISV decision head reads (seed 003, Eq. 23's c),
built by one function in both hosts.

The paper names the head's CSI input but not its contents (SEED-NOTES §3.4, 6). We use
the link abstraction the paper's simulator uses (effective rate, PER, RTT) plus one
channel-quality scalar κ in [0, 1] that the relabelling's repair budget B(κ) is monotone
in (Eq. 29):

* ``log10(uplink rate / 1 Mbit/s)``, ``PER``, ``RTT / 100 ms``, and
* κ = clip(log10(rate / 1 Mbit/s) / 3, 0, 1) · (1 − PER): 0 at ≤ 1 Mbit/s, 1 at ≥ 1 Gbit/s
  with no loss (the paper's 20 Mbit/s "poor" link: κ ≈ 0.43; 500 Mbit/s "good": κ ≈ 0.90).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NUM_CSI_FEATURES = 4
CSI_FEATURE_NAMES: tuple[str, ...] = ("log10_rate_mbps", "per", "rtt_100ms", "quality")
MIN_UPLINK_BPS = 1.0
"""The slowest uplink a channel may state (below it ``rate / 1 Mbit/s`` can underflow to 0,
whose log10 does not exist)."""
MAX_RTT_S = 1e6
"""The longest round trip a channel may state (past ~1.8e307 s ``RTT / 100 ms`` is
infinite and the head's output NaN, which no threshold rejects)."""


@dataclass(frozen=True, slots=True)
class ChannelState:
    """A link as the head sees it: uplink rate, packet error rate, round-trip time."""

    uplink_bps: float
    per: float = 0.0
    rtt_s: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.uplink_bps) and self.uplink_bps >= MIN_UPLINK_BPS):
            raise ValueError(
                f"uplink rate must be a finite number >= {MIN_UPLINK_BPS:g} bit/s, got "
                f"{self.uplink_bps}"
            )
        if not 0.0 <= self.per < 1.0:
            raise ValueError(f"PER must be in [0, 1), got {self.per}")
        if not 0.0 <= self.rtt_s <= MAX_RTT_S:  # NaN fails too
            raise ValueError(f"RTT must be in [0, {MAX_RTT_S:g}] s, got {self.rtt_s}")

    @property
    def quality(self) -> float:
        """κ in [0, 1] (module docstring)."""
        scaled = math.log10(self.uplink_bps / 1e6) / 3.0
        return min(1.0, max(0.0, scaled)) * (1.0 - self.per)


def csi_features(state: ChannelState) -> tuple[float, ...]:
    """The head's CSI vector c, in :data:`CSI_FEATURE_NAMES` order."""
    return (
        math.log10(state.uplink_bps / 1e6),
        state.per,
        state.rtt_s / 0.1,
        state.quality,
    )


def csi_count_problem(num_csi: int) -> str | None:
    """Why a decision head taking ``num_csi`` CSI features cannot be fed these
    (``None``: it can)."""
    if num_csi == NUM_CSI_FEATURES:
        return None
    return (
        f"the decision head takes {num_csi} CSI features; the runtime sends "
        f"{NUM_CSI_FEATURES} (edgespec.policies.semantic.csi)"
    )
