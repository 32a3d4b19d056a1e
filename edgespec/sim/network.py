"""Network links: per-message latency and the payload sizes of what is actually sent.

latency = RTT/2 + jitter + payload_bits / bandwidth, where jitter is exponential with
mean ``jitter_ms`` (non-negative, so messages never arrive before RTT/2), and each lost
transmission (probability ``loss_rate``, independent per attempt) costs a retransmission
timeout before the message is sent again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from edgespec.sim.rng import UniformStream

HEADER_BYTES = 64  # framing, session id, round index, prefix length
TOKEN_ID_BYTES = 4  # int32 token ids
PARENT_BYTES = 4  # int32 tree parent per node (VerifyRequest.draft_parents)
PROB_BYTES = 2  # fp16 draft probabilities


@dataclass(frozen=True, slots=True)
class Link:
    """One edge↔server path, identical in both directions."""

    rtt_s: float
    jitter_s: float
    bandwidth_bytes_per_s: float
    loss_rate: float
    retransmit_timeout_s: float

    def __post_init__(self) -> None:
        if self.rtt_s < 0 or self.jitter_s < 0 or self.retransmit_timeout_s < 0:
            raise ValueError("rtt, jitter and retransmit timeout must be >= 0")
        if self.bandwidth_bytes_per_s <= 0:
            raise ValueError("bandwidth must be > 0")
        if not 0.0 <= self.loss_rate < 1.0:
            raise ValueError(f"loss_rate must be in [0, 1), got {self.loss_rate}")

    def latency_s(self, payload_bytes: int, rng: UniformStream) -> float:
        """One-way delivery time of a ``payload_bytes`` message (draws from ``rng``)."""
        delay = 0.5 * self.rtt_s + payload_bytes / self.bandwidth_bytes_per_s
        if self.jitter_s > 0:
            delay += -self.jitter_s * math.log(1.0 - rng.next())
        if self.loss_rate > 0:
            while rng.next() < self.loss_rate:
                delay += self.retransmit_timeout_s
        return delay


def uplink_bytes(
    num_draft: int,
    num_prompt_ids: int,
    vocab_size: int,
    send_probs: bool,
    num_hidden: int = 0,
    tree: bool = False,
) -> int:
    """Draft block message: token ids, the prompt ids on a cold start, the draft
    distributions (γ × V fp16) when stochastic verification needs them, a parent per
    node for a token ``tree``; ``num_hidden`` extra fp16 values for semantic-verification
    protocols."""
    size = HEADER_BYTES + TOKEN_ID_BYTES * (num_draft + num_prompt_ids)
    if tree:
        size += PARENT_BYTES * num_draft
    if send_probs:
        size += PROB_BYTES * num_draft * vocab_size
    return size + PROB_BYTES * num_hidden


def downlink_bytes(num_committed: int) -> int:
    """Verification result: accepted length and the committed token ids."""
    return HEADER_BYTES + TOKEN_ID_BYTES * (1 + num_committed)
