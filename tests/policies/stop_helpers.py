"""Hand-built stop policies shared by the stop-predictor tests (policies, simulator,
runtime, parity): one-layer MLPs whose decisions are known in advance."""

from __future__ import annotations

import numpy as np

from edgespec.policies.stop_drafting import DenseLayer, MlpStopPolicy


def confidence_stop(
    min_confidence: float = 0.5, threshold: float = 0.5, gain: float = 200.0
) -> MlpStopPolicy:
    """P(accepted) = sigmoid(gain · (confidence − ``min_confidence``)): at ``threshold`` 0.5
    it keeps a token iff its draft confidence (feature 0) is ≥ ``min_confidence``."""
    weight = np.zeros((5, 1))
    weight[0, 0] = gain
    return MlpStopPolicy(
        mean=np.zeros(5),
        scale=np.ones(5),
        layers=(DenseLayer(weight, np.array([-gain * min_confidence])),),
        threshold=threshold,
    )


def constant_stop(keep: bool) -> MlpStopPolicy:
    """P(accepted) ≈ 1 (never stops) or ≈ 0 (stops at every position)."""
    return MlpStopPolicy(
        mean=np.zeros(5),
        scale=np.ones(5),
        layers=(DenseLayer(np.zeros((5, 1)), np.array([10.0 if keep else -10.0])),),
        threshold=0.5,
    )
