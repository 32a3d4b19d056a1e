"""A hand-built WC-DNN for the AWC tests."""

from __future__ import annotations

import numpy as np

from edgespec.policies.stop_drafting import DenseLayer
from edgespec.policies.wc_dnn import WcDnn


def constant_model(value: float, width: int = 4) -> WcDnn:
    """A WC-DNN that predicts ``value`` whatever its inputs."""
    z = DenseLayer(np.zeros((width, width)), np.zeros(width))
    return WcDnn(
        mean=np.zeros(5),
        scale=np.ones(5),
        input=DenseLayer(np.zeros((5, width)), np.zeros(width)),
        blocks=((z, z), (z, z)),
        output=DenseLayer(np.zeros((width, 1)), np.array([value])),
    )
