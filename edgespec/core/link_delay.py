"""The edge↔server link model shared by the simulator and the runtime's emulated link.

One-way delay = RTT/2 + payload_bytes / bandwidth + jitter, where jitter is exponential
with mean ``jitter_s`` (drawn by inversion from one uniform in [0, 1), and only when
``jitter_s > 0``, so a link without jitter consumes no randomness). Message sizes are
those of the simulator (:mod:`edgespec.sim.model.network`, whose ``Link.latency_s``,
``uplink_bytes`` and ``downlink_bytes`` compute the same values): a fixed header, int32
token ids and tree parents, the draft distributions (:func:`draft_probs_row_bytes`: dense
fp16 rows, the papers' model, or the runtime's compact rows) and fp16 hidden values. Pure
functions, no state: :mod:`edgespec.runtime.wire.emulated_link` uses them without importing
the simulator.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from edgespec.core.wire_limits import DRAFT_SUPPORT_MAX_TOKENS

HEADER_BYTES = 64  # framing, session id, round index, prefix length
TOKEN_ID_BYTES = 4  # int32 token ids
PARENT_BYTES = 4  # int32 tree parent per node (VerifyRequest.draft_parents)
PROB_BYTES = 2  # fp16 draft probabilities (and hidden values)
COMPACT_PROB_BYTES = 4  # a compact row's probabilities: float32 (VerifyRequest.draft_probs)

DraftProbsWire = Literal["dense", "compact"]
"""How a drafted token's distribution q travels when stochastic verification needs it:
``dense``, V fp16 values (the papers' model: WISV's rejection-sampling baseline uplinks
γ × V fp16); ``compact``, what edgespec's gRPC drafters send (``VerifyRequest``'s
``draft_support_*``): the row's entry count and its kept entries, each a varint token id
and a float32, at most :data:`~edgespec.core.wire_limits.DRAFT_SUPPORT_MAX_TOKENS` of
them."""


@dataclass(frozen=True, slots=True)
class DraftRows:
    """How a sampled round's draft distributions travel on the uplink: ``wire``
    (:data:`DraftProbsWire`), the ``top_k`` cut the session samples with (0: none), which
    bounds a compact row's kept entries (a draft shaped as the target's rows are keeps at
    most ``top_k`` tokens), and ``mean_entries``, the entries a compact row kept on average
    where captures measured them at the session's sampling (``edgespec trace``'s
    ``draft_row_entries``; 0: not measured). Top-p and min-p leave a number only a capture
    knows: unmeasured, a compact row is charged its cap,
    :data:`~edgespec.core.wire_limits.DRAFT_SUPPORT_MAX_TOKENS`, or ``top_k``."""

    wire: DraftProbsWire
    top_k: int = 0
    mean_entries: float = 0.0

    def row_entries(self, vocab_size: int) -> int:
        """The entries one compact row over ``vocab_size`` tokens is charged: the measured
        mean, rounded (at least 1), else the most it may keep."""
        kept = min(vocab_size, DRAFT_SUPPORT_MAX_TOKENS)
        if self.top_k > 0:
            kept = min(kept, self.top_k)
        if self.mean_entries > 0:
            return min(kept, max(1, round(self.mean_entries)))
        return kept


MAX_LINK_DELAY_MS = 60_000.0
"""The longest RTT or mean jitter an emulated link takes (a minute): a round sleeps it, and
``time.sleep`` overflows on 1e10 s."""
MIN_LINK_BANDWIDTH_MBPS = 0.001
"""The narrowest emulated link besides 0 (unlimited): 1 kbit/s; a narrower one's transfer
time overflows the same way."""


def link_setting_problem(name: str, value: float) -> str | None:
    """What is wrong with an emulated link's setting ``name`` (``*_ms``: an RTT or jitter;
    ``*_mbps``: a bandwidth, 0 unlimited), ``None`` when it is in range."""
    if not (math.isfinite(value) and value >= 0):
        return f"must be a finite number >= 0, got {value}"
    if name.endswith("_ms") and value > MAX_LINK_DELAY_MS:
        return f"must be at most {MAX_LINK_DELAY_MS:,.0f} ms, got {value:g}"
    if name.endswith("_mbps") and 0 < value < MIN_LINK_BANDWIDTH_MBPS:
        return (
            f"must be 0 (unlimited) or at least {MIN_LINK_BANDWIDTH_MBPS:g} Mbit/s, got {value:g}"
        )
    return None


def exponential_jitter_s(mean_s: float, uniform: float) -> float:
    """An exponential delay of mean ``mean_s`` from a uniform draw in [0, 1)."""
    return -mean_s * math.log(1.0 - uniform)


def one_way_delay_s(
    rtt_s: float,
    payload_bytes: int,
    bandwidth_bytes_per_s: float,
    jitter_s: float,
    uniform: Callable[[], float],
) -> float:
    """Delivery time of a ``payload_bytes`` message: RTT/2 + serialisation + jitter.
    ``bandwidth_bytes_per_s`` may be ``math.inf`` (no serialisation delay); ``uniform``
    is called once, and only when ``jitter_s > 0``."""
    delay = 0.5 * rtt_s + payload_bytes / bandwidth_bytes_per_s
    if jitter_s > 0:
        delay += exponential_jitter_s(jitter_s, uniform())
    return delay


def varint_bytes(value: int) -> int:
    """Bytes of ``value`` >= 0 as a protobuf varint (7 bits a byte)."""
    return max(1, -(-value.bit_length() // 7))


def draft_probs_row_bytes(vocab_size: int, rows: DraftRows | None) -> int:
    """Bytes of one drafted token's distribution q over ``vocab_size`` tokens on the uplink:
    none (``None``: greedy verification sends no q), ``dense`` (V fp16 values) or
    ``compact`` (its entry count, then the entries a row is charged,
    :meth:`DraftRows.row_entries`, each the largest token id's varint and a float32)."""
    if rows is None:
        return 0
    if rows.wire == "dense":
        return PROB_BYTES * vocab_size
    return compact_row_bytes(rows.row_entries(vocab_size), vocab_size)


def compact_row_bytes(num_entries: int, vocab_size: int) -> int:
    """A compact row of ``num_entries`` kept entries over ``vocab_size`` tokens: its count,
    then each entry's token id (the largest id's varint length) and float32."""
    id_bytes = varint_bytes(max(vocab_size - 1, 0))
    return varint_bytes(num_entries) + num_entries * (id_bytes + COMPACT_PROB_BYTES)


def uplink_bytes(
    num_draft: int,
    num_prompt_ids: int,
    vocab_size: int,
    draft_rows: DraftRows | None,
    num_hidden: int = 0,
    tree: bool = False,
) -> int:
    """Draft block message: token ids, the prompt ids on a cold start, the draft
    distributions (γ rows of :func:`draft_probs_row_bytes`) when stochastic verification
    needs them (``draft_rows`` not ``None``), a parent per node for a token ``tree``;
    ``num_hidden`` extra fp16 values."""
    size = HEADER_BYTES + TOKEN_ID_BYTES * (num_draft + num_prompt_ids)
    if tree:
        size += PARENT_BYTES * num_draft
    size += num_draft * draft_probs_row_bytes(vocab_size, draft_rows)
    return size + PROB_BYTES * num_hidden


def downlink_bytes(num_committed: int, num_hidden: int = 0) -> int:
    """Verification result: accepted length and the committed token ids, plus
    ``num_hidden`` fp16 values (target hidden states for feature drafts; the simulator
    models none)."""
    return HEADER_BYTES + TOKEN_ID_BYTES * (1 + num_committed) + PROB_BYTES * num_hidden
