"""WISV's payloads and per-round communication time (seed 003, Eqs. 3–10; reconstructed,
SEED-NOTES §3.1): how many bits each upload protocol sends and how long a round's
exchanges take on a link of effective rate R, packet error rate PER and round-trip time.

Symbols (Eq. 3): V the vocabulary, b_t = ⌈log2 V⌉ bits per token id, B_h = d_h · b_h bits
per drafter hidden vector (d_h the drafter's hidden size, b_h = 16 for FP16), b_pos bits
per position field, O_UL and O_DL the fixed overhead of an uplink and a downlink message.
The paper states none of b_pos, O_UL, O_DL: we take edgespec's link (64-byte headers,
512 bits, :data:`edgespec.core.link_delay.HEADER_BYTES`) and 16-bit positions.

* Eq. 4, feedback: S_fb = b_pos + b_t + O_DL (the first rejected position j* and the
  target's token there, or the bonus token when every draft stands).
* Eq. 5, full hidden (FH): S_UL = γ (b_t + B_h) + O_UL, one uplink with every draft
  token's id and hidden state.
* Eq. 6: T_FH = S_UL / (R_UL (1 − PER_UL)) + S_fb / (R_DL (1 − PER_DL)) + T_rtt.
* Eqs. 7–10, selective hidden (SH): S_UL1 = γ b_t + O_UL (ids only); the server asks for
  the hidden states of the m greedy mismatch positions, S_req = m b_pos + O_DL; the UE
  sends them, S_UL2 = m B_h + O_UL; T_SH adds the four serialisations and 2 T_rtt. The
  paper says SH costs "potentially one additional RTT per round": we read that the
  request and the second uplink happen only when m > 0 (a round without a mismatch
  needs no head), so T_SH = UL1 + fb + T_rtt (+ req + UL2 + T_rtt when m > 0).
* Baselines: greedy SD uplinks the ids, γ b_t + O_UL; rejection-sampling SD also the
  draft distributions, γ · V · 16 bits (FP16 probabilities over the full vocabulary).
* Protocol choice (the hardware variant): FH when the RTT exceeds 10 ms, else SH.

Pure functions on frozen values; the simulator's byte-level link
(:mod:`edgespec.core.link_delay`) keeps its own int32 ids and draws jitter and loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from edgespec.core.link_delay import HEADER_BYTES

HEADER_BITS = 8 * HEADER_BYTES
"""O_UL = O_DL: edgespec's 64-byte message header."""
FP16_BITS = 16
"""b_h, and the bits of one draft probability."""
POSITION_BITS = 16
"""b_pos: a window position (up to 65,535 drafted tokens)."""
FH_RTT_THRESHOLD_S = 0.010
"""The hardware variant's rule: FH when the handshake RTT exceeds 10 ms, else SH."""

Upload = Literal["fh", "sh"]


def token_id_bits(vocab_size: int) -> int:
    """b_t = ⌈log2 V⌉ (exact in integers: 17 bits for Llama-3's 128,256 tokens)."""
    if vocab_size < 1:
        raise ValueError(f"vocabulary size must be >= 1, got {vocab_size}")
    return (vocab_size - 1).bit_length()


def choose_upload(rtt_s: float) -> Upload:
    """FH when ``rtt_s`` > 10 ms, else SH (the paper's adaptive rule)."""
    return "fh" if rtt_s > FH_RTT_THRESHOLD_S else "sh"


@dataclass(frozen=True, slots=True)
class Payloads:
    """Message sizes in bits for a drafter of ``draft_hidden`` hidden size over a
    vocabulary of ``vocab_size`` (the module docstring's symbols)."""

    vocab_size: int
    draft_hidden: int
    hidden_value_bits: int = FP16_BITS
    position_bits: int = POSITION_BITS
    uplink_overhead_bits: int = HEADER_BITS
    downlink_overhead_bits: int = HEADER_BITS

    def __post_init__(self) -> None:
        token_id_bits(self.vocab_size)  # checks V >= 1
        for name in ("draft_hidden", "hidden_value_bits", "position_bits"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("uplink_overhead_bits", "downlink_overhead_bits"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    @property
    def token_bits(self) -> int:
        """b_t (Eq. 3)."""
        return token_id_bits(self.vocab_size)

    @property
    def hidden_bits(self) -> int:
        """B_h = d_h · b_h (Eq. 3)."""
        return self.draft_hidden * self.hidden_value_bits

    def feedback_bits(self) -> int:
        """S_fb = b_pos + b_t + O_DL (Eq. 4)."""
        return self.position_bits + self.token_bits + self.downlink_overhead_bits

    def greedy_uplink_bits(self, gamma: int) -> int:
        """Greedy SD: γ b_t + O_UL (= SH's first uplink, Eq. 7)."""
        return _count(gamma) * self.token_bits + self.uplink_overhead_bits

    def fh_uplink_bits(self, gamma: int) -> int:
        """S_UL = γ (b_t + B_h) + O_UL (Eq. 5)."""
        return _count(gamma) * (self.token_bits + self.hidden_bits) + self.uplink_overhead_bits

    def sh_request_bits(self, mismatches: int) -> int:
        """S_req = m b_pos + O_DL (Eq. 8)."""
        return _count(mismatches) * self.position_bits + self.downlink_overhead_bits

    def sh_second_uplink_bits(self, mismatches: int) -> int:
        """S_UL2 = m B_h + O_UL (Eq. 9)."""
        return _count(mismatches) * self.hidden_bits + self.uplink_overhead_bits

    def probabilities_bits(self, gamma: int) -> int:
        """Rejection sampling's draft distributions: γ · V · 16 bits."""
        return _count(gamma) * self.vocab_size * FP16_BITS

    def rejection_uplink_bits(self, gamma: int) -> int:
        """Rejection-sampling SD: the ids and the distributions, γ b_t + γ V 16 + O_UL."""
        return self.greedy_uplink_bits(gamma) + self.probabilities_bits(gamma)


def _count(n: int) -> int:
    if n < 0:
        raise ValueError(f"a token count must be >= 0, got {n}")
    return n


@dataclass(frozen=True, slots=True)
class LinkRates:
    """The link abstraction: effective rates (bit/s), packet error rates and the RTT;
    the downlink takes the uplink's rate and PER unless given."""

    uplink_bps: float
    rtt_s: float
    downlink_bps: float | None = None
    uplink_per: float = 0.0
    downlink_per: float | None = None

    def __post_init__(self) -> None:
        for name in ("uplink_bps", "downlink_bps"):
            rate = getattr(self, name)
            if rate is not None and not (rate > 0 and math.isfinite(rate)):
                raise ValueError(f"{name} must be a finite number > 0, got {rate}")
        if not (self.rtt_s >= 0 and math.isfinite(self.rtt_s)):
            raise ValueError(f"rtt_s must be a finite number >= 0, got {self.rtt_s}")
        for name in ("uplink_per", "downlink_per"):
            per = getattr(self, name)
            if per is not None and not 0.0 <= per < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {per}")

    def up_s(self, bits: int) -> float:
        """Serialisation of ``bits`` on the uplink: bits / (R_UL (1 − PER_UL))."""
        return bits / (self.uplink_bps * (1.0 - self.uplink_per))

    def down_s(self, bits: int) -> float:
        """The same on the downlink."""
        rate = self.uplink_bps if self.downlink_bps is None else self.downlink_bps
        per = self.uplink_per if self.downlink_per is None else self.downlink_per
        return bits / (rate * (1.0 - per))


def greedy_comm_s(p: Payloads, link: LinkRates, gamma: int) -> float:
    """Greedy SD's round: the ids up, the feedback down, one RTT."""
    return link.up_s(p.greedy_uplink_bits(gamma)) + link.down_s(p.feedback_bits()) + link.rtt_s


def rejection_comm_s(p: Payloads, link: LinkRates, gamma: int) -> float:
    """Rejection-sampling SD's round: ids and distributions up, feedback down, one RTT."""
    up = link.up_s(p.rejection_uplink_bits(gamma))
    return up + link.down_s(p.feedback_bits()) + link.rtt_s


def fh_comm_s(p: Payloads, link: LinkRates, gamma: int) -> float:
    """T_FH (Eq. 6)."""
    return link.up_s(p.fh_uplink_bits(gamma)) + link.down_s(p.feedback_bits()) + link.rtt_s


def sh_comm_s(p: Payloads, link: LinkRates, gamma: int, mismatches: int) -> float:
    """T_SH (Eq. 10): the first uplink, the feedback and one RTT, plus the request, the
    second uplink and a second RTT when the round has ``mismatches`` > 0."""
    total = greedy_comm_s(p, link, gamma)
    if mismatches > 0:
        total += link.down_s(p.sh_request_bits(mismatches))
        total += link.up_s(p.sh_second_uplink_bits(mismatches)) + link.rtt_s
    return total
