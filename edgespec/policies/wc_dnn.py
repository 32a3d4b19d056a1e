"""DSD's WC-DNN in numpy: the window-control network AWC (:mod:`edgespec.policies.awc`)
predicts γ with, its inputs' names and its JSON weights (trained with torch in
:mod:`edgespec.learn.awc.train`).

Input → Linear → SiLU, two residual blocks h ← h + Linear(SiLU(Linear(h))), then
Linear(SiLU(h)) → one continuous γ; inputs standardised with the training mean and scale.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.config import read_text
from edgespec.policies.stop_drafting import (
    DenseLayer,
    dense_from_json,
    require_finite,
    require_scale,
)

AWC_FEATURE_NAMES: tuple[str, ...] = (
    "queue_utilisation",
    "recent_acceptance",
    "rtt_ms",
    "tpot_ms",
    "previous_gamma",
)
BUNDLED_AWC = "wc-dnn"
"""The shipped weights: ``edgespec/data/awc/wc-dnn.json``."""


_Product = Callable[[npt.NDArray[np.float64], npt.NDArray[np.float64]], npt.NDArray[np.float64]]
"""``np.matmul`` or ``np.dot``."""


def _silu(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """x · σ(x), σ(x) = (1 + tanh(x / 2)) / 2: finite for every finite x, no clipping; in
    a new array (``x`` is left alone), each step in place: one decision per round calls
    this five times on 64 values, where each temporary costs as much as the arithmetic."""
    y = x * 0.5
    np.tanh(y, out=y)
    y *= 0.5
    y += 0.5
    y *= x  # x · (0.5 + 0.5·tanh(0.5·x)), the product commutes bit for bit
    return y


@dataclass(frozen=True, slots=True, eq=False)
class WcDnn:
    """The residual MLP in numpy (the module docstring), inputs standardised."""

    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    input: DenseLayer
    blocks: tuple[tuple[DenseLayer, DenseLayer], ...]
    output: DenseLayer
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        width = len(AWC_FEATURE_NAMES)
        if self.mean.shape != (width,) or self.scale.shape != (width,):
            raise ValueError(f"mean and scale must have {width} entries")
        require_finite("mean", self.mean)
        require_scale(self.scale)
        hidden = self.input.weight.shape[1]
        if self.input.weight.shape[0] != width or self.output.weight.shape != (hidden, 1):
            raise ValueError(f"need {width} inputs, one output and equal widths")
        for first, second in self.blocks:
            if first.weight.shape[0] != hidden or second.weight.shape[1] != hidden:
                raise ValueError("a residual block must map the width to itself")

    def predict(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Raw (continuous) γ for each row of an n × 5 matrix; NaN inputs → the mean."""
        x = (np.atleast_2d(np.asarray(features, dtype=np.float64)) - self.mean) / self.scale
        x[np.isnan(x)] = 0.0
        return self._forward(x, np.matmul)[:, 0]

    def predict_one(self, features: Sequence[float]) -> float:
        """:meth:`predict` of one row of 5 floats, the same float bit for bit (the same
        IEEE operations, the same BLAS calls) with less of numpy's per-call work: the row
        as a vector, multiplied with ``np.dot`` (the BLAS call ``@`` makes for a row: a
        vector-matrix product), bias adds without broadcasting. AWC's per-round call."""
        if len(features) != len(AWC_FEATURE_NAMES):
            raise ValueError(
                f"predict_one needs {len(AWC_FEATURE_NAMES)} features "
                f"({', '.join(AWC_FEATURE_NAMES)}), got {len(features)}"
            )
        mean, scale = self.mean.tolist(), self.scale.tolist()
        row = [(f - m) / s for f, m, s in zip(features, mean, scale, strict=True)]
        x = np.array([0.0 if v != v else v for v in row], dtype=np.float64)  # NaN → 0
        return float(self._forward(x, np.dot)[0])

    def _forward(self, x: npt.NDArray[np.float64], product: _Product) -> npt.NDArray[np.float64]:
        """The network over standardised inputs ``x`` (rows n × 5: n × 1; a vector of 5:
        a vector of 1), ``product`` multiplying by each weight; every sum in the order of
        h ← h + Linear(SiLU(Linear(h))), each step in place where nothing else reads."""
        layer = self.input
        h = product(x, layer.weight)
        h += layer.bias
        h = _silu(h)
        for first, second in self.blocks:
            t = product(h, first.weight)
            t += first.bias
            t = product(_silu(t), second.weight)
            t += h  # h + Linear(...): the sum commutes bit for bit
            t += second.bias
            h = t
        out = product(_silu(h), self.output.weight)
        out += self.output.bias
        return out

    def to_json(self) -> dict[str, Any]:
        def dense(x: DenseLayer) -> dict[str, Any]:
            return {"weight": x.weight.tolist(), "bias": x.bias.tolist()}

        return {
            "kind": "wc-dnn",
            "features": list(AWC_FEATURE_NAMES),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "input": dense(self.input),
            "blocks": [[dense(a), dense(b)] for a, b in self.blocks],
            "output": dense(self.output),
            "metadata": self.metadata,
        }


def wc_dnn_from_json(data: dict[str, Any], source: str = "<dict>") -> WcDnn:
    if data.get("kind") != "wc-dnn":
        raise ValueError(f"{source}: not WC-DNN weights (kind={data.get('kind')!r})")
    if tuple(data.get("features", ())) != AWC_FEATURE_NAMES:
        raise ValueError(f"{source}: features {data.get('features')} differ from the policy's")

    try:
        blocks = data["blocks"]
        if not isinstance(blocks, list) or not all(
            isinstance(b, list) and len(b) == 2 for b in blocks
        ):
            raise ValueError(f"blocks must be a list of layer pairs, got {blocks!r:.80}")
        return WcDnn(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            input=dense_from_json(data["input"], "input"),
            blocks=tuple(
                (dense_from_json(a, f"blocks[{i}][0]"), dense_from_json(b, f"blocks[{i}][1]"))
                for i, (a, b) in enumerate(blocks)
            ),
            output=dense_from_json(data["output"], "output"),
            metadata=dict(data.get("metadata", {})),
        )
    except KeyError as exc:
        raise ValueError(f"{source}: malformed WC-DNN weights: missing {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: malformed WC-DNN weights: {exc}") from exc


def load_wc_dnn(file: str | None = None) -> WcDnn:
    """The weights in JSON file ``file`` (the bundled ones when ``None``)."""
    if file is None:
        ref = resources.files("edgespec") / "data" / "awc" / f"{BUNDLED_AWC}.json"
        text, source = ref.read_text(encoding="utf-8"), f"bundled {BUNDLED_AWC}"
    else:
        if not Path(file).exists():
            raise ValueError(f"WC-DNN weights file {file} does not exist")
        text, source = read_text(file, "WC-DNN weights file"), file
    try:
        return wc_dnn_from_json(json.loads(text), source)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not JSON: {exc}") from exc
