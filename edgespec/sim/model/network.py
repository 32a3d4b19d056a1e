"""Network links: per-message latency and the payload sizes of what is actually sent
(the formulas live in :mod:`edgespec.core.link_delay`, shared with the runtime's emulated
link).

latency = RTT/2 + jitter + payload_bits / bandwidth, where jitter is exponential with
mean ``jitter_ms`` (non-negative, so messages never arrive before RTT/2), and each lost
transmission (probability ``loss_rate``, independent per attempt) costs a retransmission
timeout before the message is sent again. ``loss_rate`` is at most :data:`MAX_LOSS_RATE`:
a message takes 1/(1 − loss_rate) attempts on average, one draw each.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.core.link_delay import (
    HEADER_BYTES,
    PARENT_BYTES,
    PROB_BYTES,
    TOKEN_ID_BYTES,
    DraftRows,
    downlink_bytes,
    one_way_delay_s,
    uplink_bytes,
)
from edgespec.sim.model.rng import UniformStream

__all__ = [
    "HEADER_BYTES",
    "MAX_LOSS_RATE",
    "PARENT_BYTES",
    "PROB_BYTES",
    "TOKEN_ID_BYTES",
    "DraftRows",
    "Link",
    "downlink_bytes",
    "loss_rate_problem",
    "uplink_bytes",
]


MAX_LOSS_RATE = 0.99
"""The highest loss rate a link takes: each message is resent until it arrives, one draw per
attempt, 1/(1 − p) attempts on average (100 at 0.99; a rate near 1 would never finish)."""


def loss_rate_problem(loss_rate: float) -> str | None:
    """What is wrong with a link's ``loss_rate``, ``None`` when it is in range."""
    if 0.0 <= loss_rate <= MAX_LOSS_RATE:  # NaN fails too
        return None
    return (
        f"must be in [0, {MAX_LOSS_RATE:g}] (each message is resent until it arrives, "
        f"1/(1 - loss_rate) attempts on average), got {loss_rate}"
    )


@dataclass(frozen=True, slots=True)
class Link:
    """One edge↔server path: the same RTT, jitter and loss both ways; the uplink's rate is
    ``uplink_bytes_per_s`` when given (a wireless cell's share), else the bandwidth."""

    rtt_s: float
    jitter_s: float
    bandwidth_bytes_per_s: float
    loss_rate: float
    retransmit_timeout_s: float
    uplink_bytes_per_s: float | None = None

    def __post_init__(self) -> None:
        if self.rtt_s < 0 or self.jitter_s < 0 or self.retransmit_timeout_s < 0:
            raise ValueError("rtt, jitter and retransmit timeout must be >= 0")
        if self.bandwidth_bytes_per_s <= 0:
            raise ValueError("bandwidth must be > 0")
        if self.uplink_bytes_per_s is not None and self.uplink_bytes_per_s <= 0:
            raise ValueError("uplink rate must be > 0")
        if (problem := loss_rate_problem(self.loss_rate)) is not None:
            raise ValueError(f"loss_rate {problem}")

    @property
    def up_bytes_per_s(self) -> float:
        """The uplink's rate."""
        return (
            self.bandwidth_bytes_per_s
            if self.uplink_bytes_per_s is None
            else self.uplink_bytes_per_s
        )

    def latency_s(self, payload_bytes: int, rng: UniformStream) -> float:
        """One-way delivery time of a ``payload_bytes`` message on the downlink (draws from
        ``rng``)."""
        return self._delay_s(payload_bytes, self.bandwidth_bytes_per_s, rng)

    def uplink_latency_s(self, payload_bytes: int, rng: UniformStream) -> float:
        """The same on the uplink."""
        return self._delay_s(payload_bytes, self.up_bytes_per_s, rng)

    def _delay_s(self, payload_bytes: int, rate: float, rng: UniformStream) -> float:
        delay = one_way_delay_s(self.rtt_s, payload_bytes, rate, self.jitter_s, rng.next)
        if self.loss_rate > 0:
            while rng.next() < self.loss_rate:
                delay += self.retransmit_timeout_s
        return delay
