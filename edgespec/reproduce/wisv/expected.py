"""The WISV setting in expected values, for the rows whose verdict the model decides: a
round's time per method, the tokens it commits at a reject share, an answer's latency, the
share at which a WISV method's latency meets greedy's, and the shares the run's heads can
give.

What the simulator does (:mod:`edgespec.sim.model.semantic`), in expectation: i.i.d.
acceptance α; a WISV round goes on past a mismatch the head accepts (with probability
1 − r at reject share r), so it commits ``expected_committed(α, r, γ)``; greedy and
rejection sampling verify exactly (r = 1). A round takes γ drafts on the UE and its
method's link cost (:mod:`edgespec.core.semantic_link`); SH adds its second round trip
with the m mismatches' hidden states in the rounds with m > 0, m ~ Binomial(γ, 1 − α).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from edgespec.core.semantic_link import (
    LinkRates,
    fh_comm_s,
    greedy_comm_s,
    rejection_comm_s,
    sh_comm_s,
)
from edgespec.reproduce.wisv.runs import WisvResults
from edgespec.reproduce.wisv.setup import SHARE_GAP_SE, WisvSetup
from edgespec.sim.model.semantic import expected_committed

WISV_METHODS = ("fh", "sh")
_BISECTIONS = 60


@lru_cache(maxsize=4096)
def round_s(setup: WisvSetup, method: str, gamma: int, rate_mbps: float, rtt_ms: float) -> float:
    """A round's expected time under ``method`` (module docstring; cached: the bisections
    of :func:`break_even_share` ask for it again and again)."""
    p, alpha = setup.payloads(), setup.alpha
    link = LinkRates(rate_mbps * 1e6, rtt_ms / 1000.0)
    draft = gamma * setup.draft_s_per_token
    if method == "fh":
        return draft + fh_comm_s(p, link, gamma)
    if method == "sh":
        return draft + sum(
            math.comb(gamma, m) * (1 - alpha) ** m * alpha ** (gamma - m)
            * sh_comm_s(p, link, gamma, m)
            for m in range(gamma + 1)
        )  # fmt: skip
    if method == "reject":
        return draft + rejection_comm_s(p, link, gamma)
    return draft + greedy_comm_s(p, link, gamma)


def latency_s(
    setup: WisvSetup, method: str, gamma: int, rate_mbps: float, rtt_ms: float, share: float
) -> float:
    """An answer's expected latency: its rounds (output tokens over the tokens a round
    commits at reject share ``share``; exact methods at 1) times a round's time."""
    rejected = share if method in WISV_METHODS else 1.0
    rounds = setup.output_tokens / expected_committed(setup.alpha, rejected, gamma)
    return rounds * round_s(setup, method, gamma, rate_mbps, rtt_ms)


def break_even_share(
    setup: WisvSetup, method: str, gamma: int, rate_mbps: float, rtt_ms: float
) -> float:
    """The reject share at which ``method``'s expected latency meets greedy's: faster
    below it, slower above (WISV commits fewer tokens a round as the share rises, greedy's
    at 1); 0 when it is slower at every share, 1 when faster at every share."""
    greedy = latency_s(setup, "greedy", gamma, rate_mbps, rtt_ms, 1.0)

    def faster(share: float) -> bool:
        return latency_s(setup, method, gamma, rate_mbps, rtt_ms, share) < greedy

    if not faster(0.0):
        return 0.0
    if faster(1.0):
        return 1.0
    return bisected_share(faster)


def bisected_share(below: Callable[[float], bool]) -> float:
    """The reject share where ``below`` turns false (true at 0, false at 1, monotone in
    between), within 2**-60: the largest share found below it."""
    low, high = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if below(mid) else (low, mid)
    return low


@dataclass(frozen=True, slots=True)
class ShareRange:
    """The reject shares the run's heads can give at its threshold: ``low``–``high`` on
    any channel (each table's two channels' shares bound every other's), and the same
    widened by :data:`SHARE_GAP_SE` binomial standard errors over each table's held-out
    mismatches (``wide_low``–``wide_high``), the range a row's verdict is decided over."""

    low: float
    high: float
    wide_low: float
    wide_high: float
    mismatches: int
    threshold: float

    def holds(self, share: float) -> bool:
        """``share`` lies within the widened range."""
        return self.wide_low <= share <= self.wide_high

    def describe(self) -> str:
        return (
            f"the heads' reject shares at T = {self.threshold:g} on any channel, "
            f"{self.low:.3f}–{self.high:.3f} "
            "(each table's share is linear in κ between its two channels and held outside "
            f"them), {self.wide_low:.3f}–{self.wide_high:.3f} with {SHARE_GAP_SE:g} standard "
            f"errors over their {self.mismatches} held-out mismatches"
        )


def share_range(
    ends: dict[str, tuple[float, float]], mismatches: dict[str, int], threshold: float
) -> ShareRange | None:
    """The :class:`ShareRange` of heads whose tables give shares ``ends`` (table → (low,
    high) on any channel at ``threshold``) from ``mismatches`` (table → count); ``None``
    without a table, or when one does not say how many mismatches its shares come from (no
    range to bound)."""
    if not ends or any(name not in mismatches for name in ends):
        return None
    wide: list[tuple[float, float]] = []
    for name, (low, high) in ends.items():
        n = mismatches[name]
        wide.append((
            max(0.0, low - SHARE_GAP_SE * math.sqrt(low * (1 - low) / n)),
            min(1.0, high + SHARE_GAP_SE * math.sqrt(high * (1 - high) / n)),
        ))  # fmt: skip
    return ShareRange(
        min(low for low, _ in ends.values()),
        max(high for _, high in ends.values()),
        min(low for low, _ in wide),
        max(high for _, high in wide),
        min(mismatches[name] for name in ends),
        threshold,
    )


def heads_range(res: WisvResults) -> ShareRange | None:
    """The :class:`ShareRange` of the heads ``res``'s runs read (``None`` where a table's
    shares on any channel or its mismatch count are not known)."""
    ends = {name: (head.low, head.high) for name, head in res.heads.items()}
    if set(ends) != set(res.shares):
        return None
    return share_range(ends, res.mismatches, res.plan.setup.threshold)


Cell = tuple[float, float, int]
"""(RTT ms, Mbit/s, γ) of a Fig. 4 setting."""


@dataclass(frozen=True, slots=True)
class Decided:
    """Whether a WISV method is faster than greedy in some Fig. 4 settings, over the heads'
    shares: per cell its break-even share (:func:`break_even_share`); ``faster`` /
    ``slower``: the cells it is faster / slower in at every share of the range; ``open``:
    the cells whose sign a share within the range turns."""

    breaks: dict[Cell, float]
    faster: tuple[Cell, ...]
    slower: tuple[Cell, ...]
    open: tuple[Cell, ...]


def decided(setup: WisvSetup, method: str, cells: list[Cell], span: ShareRange | None) -> Decided:
    """:class:`Decided` for ``method`` in ``cells`` over ``span`` (``None``: every cell
    open)."""
    breaks = {c: break_even_share(setup, method, c[2], c[1], c[0]) for c in cells}
    if span is None:
        return Decided(breaks, (), (), tuple(cells))
    faster = tuple(c for c in cells if breaks[c] > span.wide_high)
    slower = tuple(c for c in cells if breaks[c] < span.wide_low)
    rest = tuple(c for c in cells if c not in faster and c not in slower)
    return Decided(breaks, faster, slower, rest)


def cell_words(cell: Cell) -> str:
    return f"RTT {cell[0]:g} ms, {cell[1]:g} Mbit/s, γ = {cell[2]}"
