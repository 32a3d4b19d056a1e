"""The device's side of semantic (lossy, WISV) verification: what a session asks for
(:class:`SemanticRequest`), how it uploads the draft's hidden states (:func:`choose_upload`)
and what the run reports (:class:`SemanticReport`, whose every output says *lossy*).

Upload protocols (docs/RUNTIME.md "Semantic (lossy) verification (WISV)"):

* **FH** (full hidden): every verify call carries the block's ids and the draft's hidden
  states of all its positions; one exchange per round.
* **SH** (selective hidden): the call carries ids only; when the server finds mismatches it
  answers with the positions whose hidden states it needs (``VerifyOutcome.hidden_request``,
  nothing committed) and the device sends the same block again with those rows: one more
  exchange, only in rounds with a mismatch (and never at threshold 0 or 16, which the
  server decides without the head).

``auto`` picks per session from the handshake RTT, the session opening's round trip
(WISV's hardware variant): FH above 10 ms, else SH.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from edgespec.core.semantic_link import Upload
from edgespec.core.semantic_link import choose_upload as paper_upload_rule
from edgespec.core.types import RoundRecord
from edgespec.policies.semantic.csi import ChannelState
from edgespec.policies.semantic.head import THRESHOLD_STEPS
from edgespec.runtime.messages import SemanticSpec

UploadMode = Literal["fh", "sh", "auto"]
UPLOAD_MODES: tuple[str, ...] = get_args(UploadMode)

SEMANTIC = "semantic"


@dataclass(frozen=True, slots=True)
class SemanticRequest:
    """A device's semantic session: threshold T (0..16; a mismatch is rejected when the
    server's decision head gives p ≥ T/16), the channel it reports (uplink bit/s, PER,
    RTT s: the head's CSI input, fixed for the session) and the upload protocol
    (``fh``, ``sh`` or ``auto``)."""

    threshold: int
    uplink_bps: float
    per: float = 0.0
    rtt_s: float = 0.0
    upload: UploadMode = "auto"

    def __post_init__(self) -> None:
        if type(self.threshold) is not int or not 0 <= self.threshold <= THRESHOLD_STEPS:
            raise ValueError(f"threshold must be in 0..{THRESHOLD_STEPS}, got {self.threshold}")
        ChannelState(self.uplink_bps, self.per, self.rtt_s)  # raises ValueError naming it
        if self.upload not in UPLOAD_MODES:
            raise ValueError(f"upload must be one of {list(UPLOAD_MODES)}, got {self.upload!r}")

    def spec(self, draft_hidden_size: int = 0) -> SemanticSpec:
        """What the session opening sends (``draft_hidden_size``: the draft's, which the
        server holds to its decision head's width)."""
        return SemanticSpec(self.threshold, self.uplink_bps, self.per, self.rtt_s,
                            draft_hidden_size)  # fmt: skip


def choose_upload(mode: UploadMode, handshake_rtt_s: float) -> Upload:
    """``mode`` itself unless ``auto``: then the paper's rule on the handshake RTT
    (:func:`edgespec.core.semantic_link.choose_upload`: FH above 10 ms, else SH)."""
    if mode == "fh" or mode == "sh":
        return mode
    return paper_upload_rule(handshake_rtt_s)


def committed_per_round(rounds: Sequence[RoundRecord]) -> float:
    """AAL as WISV reports it (SEED-NOTES §3.1, Eq. 20): tokens committed per round,
    the correction or bonus token included (not the project's accepted-drafts ``aal``)."""
    return sum(r.num_committed for r in rounds) / len(rounds) if rounds else 0.0


@dataclass(frozen=True, slots=True)
class SemanticReport:
    """What a semantic run did: its threshold, the upload used and the handshake RTT that
    chose it, and per round the exchanges with the server (1, or 2 for an SH follow-up) and
    the committed draft tokens that mismatched the target's argmax."""

    threshold: int
    upload: Upload
    handshake_rtt_s: float
    exchanges: tuple[int, ...]
    accepted_mismatches: tuple[int, ...]

    @property
    def labels(self) -> dict[str, Any]:
        """What every record of the run carries."""
        return {
            "verification": SEMANTIC,
            "lossy": True,
            "threshold": self.threshold,
            "upload": self.upload,
        }

    def round_labels(self, index: int) -> dict[str, Any]:
        """Round ``index``'s row labels: :attr:`labels`, its exchanges and accepted
        mismatches."""
        return {
            **self.labels,
            "exchanges": self.exchanges[index],
            "accepted_mismatches": self.accepted_mismatches[index],
        }

    def summary(self, rounds: Sequence[RoundRecord]) -> dict[str, Any]:
        """The run's summary row (``edgespec draft --records``)."""
        return {
            "type": "SemanticSummary",
            **self.labels,
            "handshake_rtt_s": self.handshake_rtt_s,
            "num_rounds": len(rounds),
            "num_exchanges": sum(self.exchanges),
            "num_accepted_mismatches": sum(self.accepted_mismatches),
            "committed_per_round": committed_per_round(rounds),
        }

    def line(self, rounds: Sequence[RoundRecord]) -> str:
        """The line ``edgespec draft`` prints: it says LOSSY and the threshold first."""
        extra = sum(self.exchanges) - len(self.exchanges)
        return (
            f"LOSSY semantic verification (threshold {self.threshold}/{THRESHOLD_STEPS}): the "
            f"output may differ from the target's own greedy decoding; "
            f"{sum(self.accepted_mismatches)} mismatching draft tokens accepted in "
            f"{len(rounds)} rounds; AAL {committed_per_round(rounds):.2f} committed tokens "
            f"per round (correction/bonus included); upload {self.upload.upper()} (handshake "
            f"RTT {self.handshake_rtt_s * 1e3:.1f} ms), {extra} follow-up exchanges"
        )
