"""The WISV decision head's inference (seed 003, Eqs. 23–27), numpy only.

At a greedy mismatch, x = [h_d ; h_t ; c] (the draft's and the target's final-layer hidden
states at that position and the CSI features, :mod:`edgespec.policies.semantic.csi`);
g(x) = W2·ReLU(W1·x + b1) + b2 (dropout is training-only); p = σ(g(x)) is the
probability that accepting the draft token is harmful. The position is rejected iff
p ≥ τ. The earliest rejected mismatch ends the round.

**Which hidden states.** For output position j (the j-th drafted token of a block), h_d
and h_t are the draft's and the target's last-layer hidden states after the final norm
(each model's LM-head input) at the input position whose logits predict token j, i.e.
the states computed on the committed prefix plus the block's tokens before j.

**Threshold scale.** The paper sweeps a threshold "0 … >15" and picks 12, while Eq. 27
thresholds a probability (SEED-NOTES §3.4, 2). We read the threshold T as sixteenths of
a probability: τ = T / 16. T = 0 rejects every mismatch (standard greedy SD), T = 16
accepts every one ("maximum = accept everything"), whatever p (:func:`rejected_at`: σ(g)
rounds to 1.0 for large logits), T = 12 rejects when p ≥ 0.75.

**Which pair.** A head reads one target's and one draft's hidden states; its file records
them (:class:`TrainedFor`, ``trained_for``; ``edgespec train wisv`` writes it), and
``edgespec serve --semantic-head`` refuses a head trained for another target. Files written
before the record existed load with ``trained_for = None``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.config import ConfigFileError, as_written, read_text
from edgespec.policies.params import PolicyParamError
from edgespec.policies.stop_drafting import require_finite, require_scale

FloatArray = npt.NDArray[np.float64]
THRESHOLD_STEPS = 16
"""The threshold's scale: τ = T / 16."""


def rejection_probability_threshold(threshold: float) -> float:
    """τ for the paper's threshold T (module docstring); T must be in [0, 16]."""
    if not 0.0 <= threshold <= THRESHOLD_STEPS:
        raise ValueError(f"threshold must be in [0, {THRESHOLD_STEPS}], got {threshold}")
    return threshold / THRESHOLD_STEPS


def rejected_at(p: FloatArray, threshold: float) -> npt.NDArray[np.bool_]:
    """Eq. 27 on rejection probabilities ``p``: reject iff p ≥ τ(threshold), exact at the
    ends whatever p: T = 0 rejects every mismatch and T = 16 accepts every one (σ(g) rounds
    to exactly 1.0 for a head logit g ≥ 37, which p ≥ 1 would reject). The one rule the
    runtime (:meth:`DecisionHead.rejects`) and the simulator's measured tables
    (``edgespec.learn.wisv.evaluation.reject_shares``) apply."""
    tau = rejection_probability_threshold(threshold)
    if tau <= 0.0 or tau >= 1.0:
        return np.full(np.shape(p), tau <= 0.0, dtype=np.bool_)
    return np.asarray(p >= tau, dtype=np.bool_)


def rule_text(threshold: float) -> str:
    """What :func:`rejected_at` does at ``threshold``, in words: ``every mismatch is
    rejected`` (T = 0), ``every mismatch is accepted`` (T = 16), else ``a mismatch is
    rejected when p >= 0.75`` (T = 12)."""
    tau = rejection_probability_threshold(threshold)
    if tau <= 0.0 or tau >= 1.0:
        return f"every mismatch is {'rejected' if tau <= 0.0 else 'accepted'}"
    return f"a mismatch is rejected when p >= {tau:g}"


@dataclass(frozen=True, slots=True)
class TrainedFor:
    """The model pair a head was trained for, named as edgespec's files name a model
    (:func:`edgespec.models.registry.recorded_name`: a known name, else an absolute path;
    ``draft`` is ``None`` when its captures had several drafts), and the target's
    vocabulary size then (``None``: not recorded)."""

    target: str
    draft: str | None
    target_vocab_size: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.target, str) or not self.target:
            raise ValueError(
                f"trained_for.target must be a model name, got {as_written(self.target)}"
            )
        if self.draft is not None and (not isinstance(self.draft, str) or not self.draft):
            raise ValueError(
                f"trained_for.draft must be a model name or null, got {as_written(self.draft)}"
            )
        size = self.target_vocab_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ValueError(
                "trained_for.target_vocab_size must be an integer >= 1 or null, "
                f"got {as_written(size)}"
            )

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "draft": self.draft,
                "target_vocab_size": self.target_vocab_size}  # fmt: skip

    @staticmethod
    def from_json(data: Any) -> TrainedFor:
        """The record :meth:`to_json` wrote; ``ValueError`` saying what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"trained_for must be a JSON object, got {type(data).__name__}")
        if "target" not in data:
            raise ValueError("trained_for is missing 'target'")
        return TrainedFor(data["target"], data.get("draft"), data.get("target_vocab_size"))


@dataclass(frozen=True, slots=True, eq=False)
class DecisionHead:
    """Eq. 25's two layers (W1: d_in × width, W2: width × 1), with the input's
    standardisation (``mean``, ``scale``) folded in front. ``draft_hidden`` and
    ``target_hidden`` are the hidden sizes the head was trained for; the CSI features
    follow them. ``trained_for``: the model pair it was trained for (``None`` in a file
    written before heads recorded it: it cannot be checked against a target)."""

    draft_hidden: int
    target_hidden: int
    mean: FloatArray
    scale: FloatArray
    w1: FloatArray
    b1: FloatArray
    w2: FloatArray
    b2: FloatArray
    trained_for: TrainedFor | None = None

    def __post_init__(self) -> None:
        for name in ("draft_hidden", "target_hidden"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {as_written(value)}")
        if self.w1.ndim != 2 or self.w2.ndim != 2:
            raise ValueError("W1 and W2 must be matrices: W1 d×h, W2 h×1")
        d_in = self.w1.shape[0]
        if self.mean.shape != (d_in,) or self.scale.shape != (d_in,):
            raise ValueError(f"standardisation must have {d_in} entries")
        if self.w2.shape != (self.w1.shape[1], 1) or self.b1.shape != (self.w1.shape[1],):
            raise ValueError("layer shapes do not chain: W1 d×h, b1 h, W2 h×1, b2 1")
        if self.b2.shape != (1,):
            raise ValueError(f"b2 must have one entry, got shape {self.b2.shape}")
        for name in ("mean", "w1", "b1", "w2", "b2"):
            require_finite(name, getattr(self, name))
        require_scale(self.scale)
        if d_in <= self.draft_hidden + self.target_hidden:
            raise ValueError(
                f"input width {d_in} leaves no CSI features after {self.draft_hidden} + "
                f"{self.target_hidden} hidden values"
            )

    @property
    def num_csi(self) -> int:
        return int(self.w1.shape[0]) - self.draft_hidden - self.target_hidden

    def inputs(
        self, draft_hidden: FloatArray, target_hidden: FloatArray, csi: tuple[float, ...]
    ) -> FloatArray:
        """x = [h_d ; h_t ; c] for n positions (n × d_in); shapes are checked."""
        hd, ht = np.atleast_2d(draft_hidden), np.atleast_2d(target_hidden)
        if hd.shape[1] != self.draft_hidden or ht.shape[1] != self.target_hidden:
            raise ValueError(
                f"hidden states of width {hd.shape[1]} and {ht.shape[1]}; the head takes "
                f"{self.draft_hidden} (draft) and {self.target_hidden} (target)"
            )
        if hd.shape[0] != ht.shape[0] or len(csi) != self.num_csi:
            raise ValueError(
                f"{hd.shape[0]} draft and {ht.shape[0]} target rows, {len(csi)} CSI "
                f"features (the head takes {self.num_csi})"
            )
        c = np.broadcast_to(np.asarray(csi, dtype=np.float64), (hd.shape[0], self.num_csi))
        return np.concatenate([hd, ht, c], axis=1).astype(np.float64)

    def rejection_probability(self, x: FloatArray) -> FloatArray:
        """p = σ(g(x)) per row of x."""
        z = (x - self.mean) / self.scale
        hidden = np.maximum(z @ self.w1 + self.b1, 0.0)
        logit = (hidden @ self.w2 + self.b2)[:, 0]
        with np.errstate(over="ignore"):  # g ≪ 0: exp(−g) = inf, and σ = 1 / inf = 0 exactly
            return 1.0 / (1.0 + np.exp(-logit))

    def rejects(self, x: FloatArray, threshold: float) -> npt.NDArray[np.bool_]:
        """Eq. 27: reject iff p ≥ τ(threshold). A p that is not a number (inputs past what
        the head can take) is a ``ValueError``, not an acceptance: NaN ≥ τ is false for
        every τ, and would accept every mismatch whatever the threshold."""
        p = self.rejection_probability(x)
        if not np.isfinite(p).all():
            rows = np.flatnonzero(~np.isfinite(p)).tolist()
            raise ValueError(
                f"the decision head's rejection probability is not a number at rows {rows[:8]}"
            )
        return rejected_at(p, threshold)

    def to_json(self) -> dict[str, Any]:
        return {
            "draft_hidden": self.draft_hidden,
            "target_hidden": self.target_hidden,
            **{k: getattr(self, k).tolist() for k in ("mean", "scale", "w1", "b1", "w2", "b2")},
            **({} if self.trained_for is None else {"trained_for": self.trained_for.to_json()}),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> DecisionHead:
        """The head :meth:`to_json` wrote; ``ValueError`` saying what is missing or wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        missing = [k for k in (*_SIZES, *_ARRAYS) if k not in data]
        if missing:
            keys = "key" if len(missing) == 1 else "keys"
            raise ValueError(f"missing {keys} {', '.join(map(repr, missing))}")
        arrays = {}
        for k in _ARRAYS:
            try:
                arrays[k] = np.asarray(data[k], dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{k} must be an array of numbers: {exc}") from None
        pair = data.get("trained_for")  # absent from older files
        trained_for = None if pair is None else TrainedFor.from_json(pair)
        return DecisionHead(data["draft_hidden"], data["target_hidden"], **arrays,
                            trained_for=trained_for)  # fmt: skip


_SIZES = ("draft_hidden", "target_hidden")
_ARRAYS = ("mean", "scale", "w1", "b1", "w2", "b2")


def load_head(path: str | Path) -> DecisionHead:
    """A head saved as JSON (:meth:`DecisionHead.to_json`); ``ValueError`` naming the file
    and what is wrong (missing, unreadable, over :data:`~edgespec.config.MAX_TEXT_BYTES`
    (refused after reading one byte more), not UTF-8, not JSON, a missing key, a bad shape
    or a non-finite value)."""
    try:
        text = read_text(path, "decision head file")
    except ConfigFileError as exc:
        raise ValueError(f"cannot read {path}: {exc.message}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return DecisionHead.from_json(json.loads(text))
    except ValueError as exc:  # json.JSONDecodeError is one
        kind = "not JSON: " if isinstance(exc, json.JSONDecodeError) else ""
        raise ValueError(f"{path} is not a decision head: {kind}{exc}") from None
    except RecursionError:  # arrays nested past Python's recursion limit
        raise ValueError(f"{path} is not a decision head: nested too deeply") from None


def head_policy(path: str) -> DecisionHead:
    """Registry factory (kind ``head``, name ``wisv``): :func:`load_head`, whatever is wrong
    with the file a :class:`PolicyParamError` naming ``path`` (the registry has checked
    that it is a string)."""
    try:
        return load_head(path)
    except ValueError as exc:
        raise PolicyParamError("path", str(exc)) from exc
