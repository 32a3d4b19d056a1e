"""Stop-at-first-predicted-rejection drafting (WISP §4.1, App. A Eq. 25–26).

A rejection predictor looks at each drafted position's draft-distribution features
(:data:`STOP_FEATURE_NAMES`, the order of :mod:`edgespec.core.features` without the
in-block ``position``) and predicts whether the target will accept that token. The device
drafts while the predictor says "accept" and sends the block at the first predicted
rejection: K_θ = max{k ∈ 0..K_max : Ẑ_1 = … = Ẑ_k = 1}.

Accounting, the same in both hosts (SEED-NOTES §1.4 item 13): the token the predictor
stops on **is drafted** — its distribution, from which the features come, costs one draft
forward pass — and **is not sent** (Eq. 25 excludes it). A block that reaches K_max is sent
whole with K_max passes, as without a predictor.

:class:`MlpStopPolicy` is the shipped predictor: a small MLP trained with torch in
``edgespec.learn.stop.train`` and run here in numpy (batch-norm folded into the linear
layers, inputs standardised with the training set's mean and spread).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.config import as_written, read_text
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.interfaces import DraftStopPolicy as DraftStopPolicy  # re-exported
from edgespec.policies.params import PolicyParamError

STOP_FEATURE_NAMES: tuple[str, ...] = (
    "confidence",
    "entropy_nats",
    "margin",
    "logit_std",
    "top5_mass",
)
BUNDLED_STOP_PREDICTOR = "gemma3-270m-draft"
"""Name of the shipped predictor (``edgespec/data/predictors/<name>.json``)."""


class StopPolicyContractError(PolicyContractError):
    """A stop policy answered outside its contract (a :class:`PolicyContractError`, as a
    window, batching or routing policy's: the command line says it in one line)."""


def checked_keep_mask(
    policy: DraftStopPolicy, features: npt.NDArray[np.float64]
) -> npt.NDArray[np.bool_]:
    """The policy's answer for ``features``, checked: one bool per row."""
    rows = np.atleast_2d(np.asarray(features, dtype=np.float64))
    if rows.shape[1:] != (len(STOP_FEATURE_NAMES),):
        raise ValueError(
            f"stop features must be n × {len(STOP_FEATURE_NAMES)} "
            f"({', '.join(STOP_FEATURE_NAMES)}), got shape {rows.shape}"
        )
    answer = np.asarray(policy.keep_mask(rows))
    if answer.shape != (rows.shape[0],) or answer.dtype != np.bool_:
        raise StopPolicyContractError(
            f"stop policy {type(policy).__name__} returned {answer.dtype} of shape "
            f"{answer.shape} for {rows.shape[0]} rows; expected one bool per row"
        )
    return answer


def kept_prefix(keep: Sequence[bool] | npt.NDArray[np.bool_], start: int, k_max: int) -> int:
    """K_θ of Eq. 25: how many positions from ``start`` are kept before the first
    predicted rejection, at most ``k_max`` (and at most the positions left)."""
    limit = min(k_max, len(keep) - start)
    k = 0
    while k < limit and keep[start + k]:
        k += 1
    return k


def draft_passes(num_kept: int, k_max: int) -> int:
    """Draft forward passes of a round that kept ``num_kept`` of at most ``k_max``: the
    kept tokens plus the one the predictor stopped on (none when the block is full)."""
    return num_kept if num_kept >= k_max else num_kept + 1


def require_finite(name: str, values: npt.NDArray[np.float64]) -> None:
    """Refuse a NaN or ±inf anywhere in ``values`` (loaded weights, a mean), naming the
    first one: ``weight[3, 7] is nan, not a finite number``."""
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        at = tuple(int(i) for i in bad[0])
        raise ValueError(f"{name}[{', '.join(map(str, at))}] is {values[at]}, not a finite number")


def require_scale(scale: npt.NDArray[np.float64]) -> None:
    """A standardising spread divides the inputs: each entry finite and > 0."""
    for i, value in enumerate(scale.tolist()):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"scale[{i}] must be finite and > 0, got {value}")


@dataclass(frozen=True, slots=True, eq=False)
class DenseLayer:
    """One linear layer ``x @ weight + bias``, finite, the bias one entry per output."""

    weight: npt.NDArray[np.float64]
    """in × out"""
    bias: npt.NDArray[np.float64]

    def __post_init__(self) -> None:
        if self.weight.ndim != 2:
            raise ValueError(f"weight must be in × out, got shape {self.weight.shape}")
        if self.bias.shape != (self.weight.shape[1],):
            raise ValueError(
                f"bias must have {self.weight.shape[1]} entries (the weight's outputs), "
                f"got shape {self.bias.shape}"
            )
        require_finite("weight", self.weight)
        require_finite("bias", self.bias)


def dense_from_json(data: Any, name: str) -> DenseLayer:
    """A :class:`DenseLayer` from ``{"weight": [[...]], "bias": [...]}``; an error names
    the layer (``layers[2].bias ...``)."""
    if not isinstance(data, dict) or set(data) != {"weight", "bias"}:
        raise ValueError(f"{name} must be an object with weight and bias, got {data!r:.80}")
    try:
        weight = np.asarray(data["weight"], dtype=np.float64)
        bias = np.asarray(data["bias"], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: weight and bias must be arrays of numbers: {exc}") from exc
    try:
        return DenseLayer(weight, bias)
    except ValueError as exc:  # its messages start with the field: weight..., bias...
        raise ValueError(f"{name}.{exc}") from exc


@dataclass(frozen=True, slots=True, eq=False)
class MlpStopPolicy:
    """A ReLU MLP giving P(accepted) per row; keeps a token when P ≥ ``threshold``."""

    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    layers: tuple[DenseLayer, ...]
    threshold: float
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        width = len(STOP_FEATURE_NAMES)
        if self.mean.shape != (width,) or self.scale.shape != (width,):
            raise ValueError(f"mean and scale must have {width} entries")
        require_finite("mean", self.mean)
        require_scale(self.scale)
        if not self.layers or self.layers[0].weight.shape[0] != width:
            raise ValueError(f"the first layer must take {width} inputs")
        if self.layers[-1].weight.shape[1] != 1:
            raise ValueError("the last layer must have one output (the accept logit)")
        for before, after in zip(self.layers, self.layers[1:], strict=False):
            if before.weight.shape[1] != after.weight.shape[0]:
                raise ValueError("layer sizes do not chain")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold}")

    def accept_probability(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """P(accepted) for each row of an n × 5 matrix."""
        h = (np.atleast_2d(np.asarray(features, dtype=np.float64)) - self.mean) / self.scale
        for layer in self.layers[:-1]:
            h = np.maximum(h @ layer.weight + layer.bias, 0.0)
        last = self.layers[-1]
        logit = (h @ last.weight + last.bias)[:, 0]
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(logit, -60.0, 60.0))), dtype=np.float64)

    def keep_mask(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        return np.asarray(self.accept_probability(features) >= self.threshold, dtype=np.bool_)

    def with_threshold(self, threshold: float) -> MlpStopPolicy:
        return MlpStopPolicy(self.mean, self.scale, self.layers, threshold, self.metadata)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "mlp",
            "features": list(STOP_FEATURE_NAMES),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "layers": [{"weight": x.weight.tolist(), "bias": x.bias.tolist()} for x in self.layers],
            "threshold": self.threshold,
            "metadata": self.metadata,
        }


def mlp_from_json(data: dict[str, Any], source: str = "<dict>") -> MlpStopPolicy:
    """Rebuild an :class:`MlpStopPolicy` from :meth:`MlpStopPolicy.to_json`'s form."""
    if data.get("kind") != "mlp":
        raise ValueError(f"{source}: not an MLP stop predictor (kind={data.get('kind')!r})")
    features = data.get("features")
    if not isinstance(features, list) or tuple(features) != STOP_FEATURE_NAMES:
        raise ValueError(
            f"{source}: features {data.get('features')} differ from {list(STOP_FEATURE_NAMES)}"
        )
    try:
        threshold = data["threshold"]
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise ValueError(f"threshold must be a number, got {as_written(threshold)}")
        if not isinstance(data["layers"], list):
            raise ValueError(f"layers must be a list, got {data['layers']!r:.80}")
        return MlpStopPolicy(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            layers=tuple(dense_from_json(x, f"layers[{i}]") for i, x in enumerate(data["layers"])),
            threshold=float(threshold),
            metadata=dict(data.get("metadata", {})),
        )
    except KeyError as exc:
        raise ValueError(f"{source}: malformed MLP stop predictor: missing {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: malformed MLP stop predictor: {exc}") from exc


def load_stop_policy(file: str | None = None, threshold: float | None = None) -> MlpStopPolicy:
    """The predictor in JSON file ``file`` (the bundled one when ``None``), optionally at
    another ``threshold`` (registry kind ``stop``, name ``mlp``); a :class:`PolicyParamError`
    naming ``threshold`` (outside [0, 1], checked first) or ``file`` (missing, unreadable,
    not a predictor)."""
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise PolicyParamError("threshold", f"threshold must be in [0, 1], got {threshold}")
    if file is None:
        policy = _stop_policy_from_text(*_bundled_stop_predictor())
    else:
        try:
            found = Path(file)
            if not found.exists():
                raise ValueError(f"stop predictor file {file} does not exist")
            text = read_text(found, "stop predictor file")
            policy = _stop_policy_from_text(text, str(found))
        except ValueError as exc:
            raise PolicyParamError("file", str(exc)) from exc
    return policy if threshold is None else policy.with_threshold(threshold)


def _bundled_stop_predictor() -> tuple[str, str]:
    ref = resources.files("edgespec") / "data" / "predictors" / f"{BUNDLED_STOP_PREDICTOR}.json"
    return ref.read_text(encoding="utf-8"), f"bundled {BUNDLED_STOP_PREDICTOR}"


def _stop_policy_from_text(text: str, source: str) -> MlpStopPolicy:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(
            f"{source}: not a stop predictor (a JSON {type(data).__name__}, not an object)"
        )
    return mlp_from_json(data, source)
