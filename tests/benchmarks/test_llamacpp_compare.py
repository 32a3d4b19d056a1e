"""benchmarks/llamacpp_compare.py's fits: on points made from known costs, Eq. 19 plus the
head-row term recovers them and predicts the held-out points; Eq. 19 alone cannot."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from edgespec.policies.estimator import BatchShape
from tests.benchmarks.scripts import load_script


def _script() -> ModuleType:
    return load_script("llamacpp_compare.py", "llamacpp_compare_script")


def test_the_head_row_term_recovers_known_costs() -> None:
    a, h, c = 0.007, 0.011, 0.005  # s per new token, per logit row, per pass
    rng = np.random.default_rng(0)
    points = []
    for i in range(60):
        entries = []
        for _ in range(int(rng.integers(1, 5))):
            cached = int(rng.choice([0, 120, 240]))
            entries.append((int(rng.integers(1, 60)), cached))
        rows = sum(n if cached else min(4, n // 2) + 1 for n, cached in entries)
        time_s = c + a * BatchShape.of(entries).num_linear + h * rows
        points.append(["x", "test" if i % 4 == 0 else "train", entries, time_s])
    result = _script().fits(points)
    plus = result["eq19_plus_head_rows"]
    assert abs(plus["coefficients"]["h_s_per_logit_row"] - h) < 1e-9
    assert abs(plus["coefficients"]["a_s"] - a) < 1e-9
    assert plus["held_out"]["mape_pct"] < 1e-6
    assert result["eq19"]["held_out"]["mape_pct"] > 1.0
