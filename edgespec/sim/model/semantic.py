"""Semantic (lossy) verification in the simulator: WISV's CSI-aware decision head (seed 003)
as its effect on acceptance, and the scenario section that switches it on.

Greedy verification localises the mismatches of a block: the acceptance model's rejections
(a 0 of a trace, a rejection draw of ``iid`` or ``decay``). Under ``verification: {rule:
semantic}`` each mismatch goes to the decision head, which rejects it with probability
``reject_share`` (the share of mismatches the head rejects at the threshold T on this
device's channel) and otherwise accepts the draft token; the run goes on with the next
position. The earliest rejected mismatch ends the round with the target's token; when none
is rejected the target's next token is the bonus. So a round commits the accepted drafts
(accepted mismatches included) + 1, as in exact verification.

:func:`semantic_round` walks the whole block with the scenario's acceptance model, asking
it again after each mismatch from the next position (``accepted(seq, position + k + 1,
γ − k − 1, rng)``): exact for traces (a property of each position) and i.i.d.; for
``decay`` the conditional rates restart after a mismatch. It walks past the first rejected
mismatch too, because selective-hidden upload (SH) asks for the hidden states of every
mismatch of the block (m = |C_r|) before the head runs; FH and SH thus draw the same
acceptance numbers and, on a link without jitter or loss (whose draws share the device's
stream), commit the same tokens, as the paper's Table I says ("SH has identical
AAL/rounds"). A reject share of 1 (T = 0 in a table) or 0 (T = 16) is a verdict the
server knows without the head: share 1 is exact verification, drawing what it draws (the
same seed gives exact's records under SH), share 0 accepts the whole block and draws
nothing; neither asks SH for hidden states.

The threshold T picks the share from a table; with a fixed ``reject_share`` it would
decide nothing, so the two together are refused (a threshold never labels a run it did
not decide).

The reject share is a number (``reject_share``) or a head's measured table (``table``,
:mod:`edgespec.sim.model.reject_table`: ``edgespec/data/wisv/<name>-acceptance.json``, or
a JSON path), read at T and at the device's channel quality κ.

What crosses the link (:mod:`edgespec.core.semantic_link` has the paper's bit counts):
FH adds every drafted token's hidden state (d_h fp16 values) to the block's uplink; SH
sends the block as greedy SD does and, when the round has mismatches, the server's request
(a header and 4 bytes per position) down and the m hidden states (a header and m·d_h fp16
values) up after the verification, before the verdict goes down: one more round trip
(it counts in the round's downlink time). ``auto`` is FH when the link's RTT exceeds
10 ms, else SH. A fused round (drafted on the server) sends no hidden states.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from edgespec.config import ConfigError
from edgespec.core.link_delay import HEADER_BYTES, PROB_BYTES, TOKEN_ID_BYTES
from edgespec.core.semantic_link import Upload, choose_upload
from edgespec.policies.semantic.csi import ChannelState
from edgespec.policies.semantic.head import THRESHOLD_STEPS
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.network import Link
from edgespec.sim.model.reject_table import (
    TRAIN_COMMAND,
    RejectShareTable,
    load_reject_table,
    parse_reject_table,
    table_path,
    tables_dir,
)
from edgespec.sim.model.rng import UniformStream

__all__ = [
    "TRAIN_COMMAND",
    "RejectShareTable",
    "load_reject_table",
    "parse_reject_table",
    "table_path",
    "tables_dir",
]
"""The reject-share tables live in :mod:`edgespec.sim.model.reject_table`; these names are
kept here for the scenario's setup, which reads them with the verification section."""

DEFAULT_THRESHOLD = 12.0
"""The paper's chosen threshold (Fig. 3)."""
_SEMANTIC_KEYS = ("threshold", "upload", "reject_share", "table", "draft_hidden")


@dataclass(frozen=True, slots=True)
class VerificationConfig:
    """Scenario section ``verification`` (module docstring). ``rule``: ``exact`` (the
    default: greedy, or rejection sampling when ``temperature > 0``) or ``semantic``;
    the other keys apply to ``semantic`` only: ``upload`` ``fh``, ``sh`` or ``auto``
    (default), exactly one of ``reject_share`` (in [0, 1]) and ``table`` (a name or a JSON
    path), ``threshold`` T in [0, 16] (default 12; with ``table`` only: it reads the
    table), ``draft_hidden`` (d_h; default the device pool's draft model's hidden size)."""

    rule: Literal["exact", "semantic"] = "exact"
    threshold: float | None = None
    upload: Literal["fh", "sh", "auto"] | None = None
    reject_share: float | None = None
    table: str | None = None
    draft_hidden: int | None = None

    def validate(self) -> None:
        if self.rule == "exact":
            for name in _SEMANTIC_KEYS:
                if getattr(self, name) is not None:
                    raise ConfigError(
                        f"verification.{name}", "applies only to rule: semantic (rule is exact)"
                    )
            return
        if (self.reject_share is None) == (self.table is None):
            raise ConfigError(
                "verification",
                "rule: semantic needs exactly one of reject_share (the share of mismatches "
                "the decision head rejects, 0..1) and table (a head's measured shares by "
                "threshold and channel, e.g. gemma3-270m)",
            )
        threshold = self.threshold_value
        if not 0.0 <= threshold <= THRESHOLD_STEPS:
            raise ConfigError(
                "verification.threshold", f"must be in [0, {THRESHOLD_STEPS}], got {threshold}"
            )
        if self.reject_share is not None and self.threshold is not None:
            raise ConfigError(
                "verification.threshold",
                f"{self.threshold:g} decides nothing with reject_share {self.reject_share:g} "
                "(T only picks a share from a table): give a table instead "
                "(verification.reject_share=null verification.table=gemma3-270m), or drop "
                "threshold",
            )
        share = self.reject_share
        if share is not None and not 0.0 <= share <= 1.0:
            raise ConfigError("verification.reject_share", f"must be in [0, 1], got {share}")
        if self.draft_hidden is not None and self.draft_hidden < 1:
            raise ConfigError("verification.draft_hidden", f"must be >= 1, got {self.draft_hidden}")

    @property
    def semantic(self) -> bool:
        return self.rule == "semantic"

    @property
    def threshold_value(self) -> float:
        """T (12 unless given)."""
        return DEFAULT_THRESHOLD if self.threshold is None else self.threshold


@dataclass(frozen=True, slots=True)
class DeviceSemantics:
    """What semantic verification is on one device: the head's reject share on its
    channel (quality κ), its upload protocol and d_h (fp16 values per hidden state)."""

    reject_share: float
    upload: Upload
    hidden_values: int
    quality: float

    def uplink_hidden_values(self, sent: int) -> int:
        """Hidden values in the block's uplink: all of them under FH, none under SH."""
        return sent * self.hidden_values if self.upload == "fh" else 0

    def request_bytes(self, mismatches: int) -> int:
        """SH's request: a header and an int32 position per mismatch."""
        return HEADER_BYTES + TOKEN_ID_BYTES * mismatches

    def second_uplink_bytes(self, mismatches: int) -> int:
        """SH's second uplink: a header and the mismatches' hidden states (fp16)."""
        return HEADER_BYTES + PROB_BYTES * self.hidden_values * mismatches


def device_semantics(
    config: VerificationConfig,
    link: Link,
    draft_hidden: int,
    table: RejectShareTable | None,
) -> DeviceSemantics:
    """A device's :class:`DeviceSemantics` under ``config`` (semantic), over ``link``,
    drafting with hidden size ``draft_hidden`` (``config.draft_hidden`` wins)."""
    try:
        channel = ChannelState(link.up_bytes_per_s * 8.0, link.loss_rate, link.rtt_s)
    except ValueError as exc:  # a link the head's CSI cannot describe
        raise ConfigError("links", f"a semantic device's link: {exc}") from None
    quality = channel.quality
    if table is not None:
        share = table.share(quality, config.threshold_value)
    else:
        assert config.reject_share is not None  # validated
        share = config.reject_share
    upload = config.upload or "auto"
    chosen: Upload = choose_upload(link.rtt_s) if upload == "auto" else upload
    hidden = draft_hidden if config.draft_hidden is None else config.draft_hidden
    return DeviceSemantics(share, chosen, hidden, quality)


def semantic_round(
    base: AcceptanceModel,
    seq: Sequence[int] | None,
    position: int,
    gamma: int,
    rng: UniformStream,
    reject_share: float,
) -> tuple[int, int]:
    """(accepted drafts, mismatches in the block) of one round of ``gamma`` drafted tokens
    at output ``position`` (module docstring): each mismatch before the first rejected one
    is rejected with probability ``reject_share`` (one draw from ``rng`` each). A share of
    1 or 0 is a verdict known without the head: no head, no mismatches sent (module
    docstring), and share 1 draws exactly what exact verification draws."""
    if reject_share >= 1.0:  # every mismatch rejected: exact verification's draws
        return base.accepted(seq, position, gamma, rng), 0
    if reject_share <= 0.0:  # every mismatch accepted: nothing to draw
        return gamma, 0
    k = 0
    mismatches = 0
    rejected = -1
    while k < gamma:
        k += base.accepted(seq, position + k, gamma - k, rng)
        if k >= gamma:
            break
        mismatches += 1  # position k mismatches
        if rejected < 0 and rng.next() < reject_share:
            rejected = k
        k += 1
    return (gamma if rejected < 0 else rejected), mismatches


def expected_committed(alpha: float, reject_share: float, gamma: int) -> float:
    """Committed tokens per round of an i.i.d. acceptance ``alpha`` under semantic
    verification (a position continues with probability p = α + (1 − α)(1 − share)):
    (1 − p^(γ+1)) / (1 − p); exact verification is ``reject_share`` = 1."""
    p = alpha + (1.0 - alpha) * (1.0 - reject_share)
    if math.isclose(p, 1.0):
        return float(gamma + 1)
    return (1.0 - p ** (gamma + 1)) / (1.0 - p)
