"""Stop-at-first-predicted-rejection drafting in the simulator (WISP §4.1, Eq. 25).

Two ways to know what the predictor says at a drafted position:

* **Replay** — a request whose acceptance sequence comes from a real trace with per-position
  ``draft_features`` asks the stop policy itself (the same object the real drafter calls,
  :mod:`edgespec.policies.stop_drafting`) about every position once, when its sequence is
  first seen; a round then sends the kept prefix of its window. Under greedy decoding a
  position's features and outcome do not depend on where its round started, so this is
  what the real drafter would decide.
* **Confusion stand-in** — for requests without features (i.i.d. or decay acceptance, or
  traces captured without them): the round's true outcome is drawn when it is drafted,
  then each position is kept with probability ``confusion_tpr`` if the target would accept
  it and ``confusion_fpr`` otherwise (its first rejection and any position after it;
  SEED-NOTES §1.4 item 12), from the device's own random stream.

Either way the round sends K_θ tokens, runs ``draft_passes(K_θ, γ)`` draft passes (the
stopped token is drafted, not sent) and pays ``overhead_ms`` per pass for the predictor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from edgespec.config import POLICY_KIND, ConfigError, PolicySpec
from edgespec.core.features import FeatureRows
from edgespec.policies.stop_drafting import DraftStopPolicy, checked_keep_mask, draft_passes
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.rng import UniformStream


@dataclass(frozen=True, slots=True)
class StopPredictorConfig:
    """Scenario section ``stop_predictor`` (see the module docstring). ``policy``: a stop
    policy by registry name (``{name: mlp}``: the bundled predictor; ``params.file``,
    ``params.threshold``) replayed on trace features; ``confusion_tpr`` /
    ``confusion_fpr``: the stand-in for requests without features; ``overhead_ms``: the
    predictor's time per draft pass on the device (WISP Table 11: 0.459 ms on a Pi 5)."""

    policy: PolicySpec | None = field(default=None, metadata={POLICY_KIND: "stop"})
    confusion_tpr: float | None = None
    confusion_fpr: float | None = None
    overhead_ms: float = 0.0

    def validate(self) -> None:
        if (self.confusion_tpr is None) != (self.confusion_fpr is None):
            raise ConfigError("stop_predictor", "give both confusion_tpr and confusion_fpr")
        if self.policy is None and self.confusion_tpr is None:
            raise ConfigError("stop_predictor", "needs a policy or confusion_tpr/confusion_fpr")
        for name in ("confusion_tpr", "confusion_fpr"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ConfigError(f"stop_predictor.{name}", f"must be in [0, 1], got {value}")
        if not 0.0 <= self.overhead_ms < float("inf"):
            raise ConfigError("stop_predictor.overhead_ms", f"must be >= 0, got {self.overhead_ms}")


@dataclass(frozen=True, slots=True)
class StopBlock:
    """One round's drafting under a stop predictor: tokens sent (K_θ), draft passes run,
    and — for the confusion stand-in, which draws the outcome early — the tokens accepted."""

    sent: int
    passes: int
    accepted: int | None


@dataclass(frozen=True, slots=True)
class ReplayFeatures:
    """One captured acceptance sequence with its feature rows: ``rows`` per output position
    (on the target's prefix), ``after`` by rejected position (the positions the draft
    drafts on its own tokens after a rejection; None for traces captured without them)."""

    seq: tuple[int, ...]
    rows: FeatureRows
    after: Mapping[int, FeatureRows] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class _Keeps:
    on_prefix: npt.NDArray[np.bool_]
    after: Mapping[int, npt.NDArray[np.bool_]]


class StopModel:
    """Cuts a round's block short where the predictor says stop (module docstring)."""

    def __init__(
        self,
        config: StopPredictorConfig,
        policy: DraftStopPolicy | None,
        features: Sequence[ReplayFeatures],
    ) -> None:
        self.overhead_s = config.overhead_ms / 1e3
        self.tpr = config.confusion_tpr
        self.fpr = config.confusion_fpr
        self.policy = policy
        # by id of the sequence object (kept alive in the value): features, then decisions
        self._features = {id(f.seq): f for f in features}
        self._keeps: dict[int, tuple[tuple[int, ...], _Keeps]] = {}

    def keeps_for(self, seq: tuple[int, ...] | None) -> _Keeps | None:
        """The policy's decisions for ``seq``'s positions (None: no features to replay)."""
        if seq is None or self.policy is None:
            return None
        hit = self._keeps.get(id(seq))
        if hit is not None and hit[0] is seq:
            return hit[1]
        found = self._features.get(id(seq))
        if found is None or found.seq is not seq:
            return None
        after = {
            p: checked_keep_mask(self.policy, np.asarray(rows, dtype=np.float64))
            for p, rows in (found.after or {}).items()
            if rows
        }
        keeps = _Keeps(checked_keep_mask(self.policy, np.asarray(found.rows)), after)
        self._keeps[id(seq)] = (seq, keeps)
        return keeps

    def block(
        self,
        request_id: str,
        seq: tuple[int, ...] | None,
        position: int,
        gamma: int,
        acceptance: AcceptanceModel,
        rng: UniformStream,
    ) -> StopBlock:
        """The round drafted at output ``position`` with window ``gamma`` ≥ 1."""
        keeps = self.keeps_for(seq)
        if keeps is not None and seq is not None:
            sent = replayed_prefix(seq, keeps, position, gamma)
            return StopBlock(sent, draft_passes(sent, gamma), None)
        if self.tpr is None or self.fpr is None:
            raise ValueError(
                f"stop predictor: request {request_id} has no draft features to replay and "
                "the scenario gives no confusion_tpr/confusion_fpr stand-in"
            )
        accepted = acceptance.accepted(seq, position, gamma, rng)
        sent = 0
        while sent < gamma and rng.next() < (self.tpr if sent < accepted else self.fpr):
            sent += 1
        return StopBlock(sent, draft_passes(sent, gamma), min(accepted, sent))


def replayed_prefix(seq: tuple[int, ...], keeps: _Keeps, position: int, gamma: int) -> int:
    """K_θ of a round at ``position``: the trace's decisions up to and including the first
    rejected position r, then those on the draft's own continuation after r (the trace's
    ``rejection_features``; where it has none or too few, the decisions on the target's
    prefix stand in). Sequences shorter than the output wrap around, as acceptance does."""
    on_prefix = keeps.on_prefix
    n = len(on_prefix)
    sent = 0
    while sent < gamma:
        pos = (position + sent) % n
        if not on_prefix[pos]:
            return sent
        sent += 1
        if not seq[pos]:
            break  # a kept first rejection: the rest of the round is the draft's own
    else:
        return sent
    after = keeps.after.get(pos)
    j = 0
    while after is not None and sent < gamma and j < len(after):
        if not after[j]:
            return sent
        sent, j = sent + 1, j + 1
    while sent < gamma and on_prefix[(position + sent) % n]:
        sent += 1
    return sent
