"""benchmarks/llamacpp_compare.py's fits: on points made from known costs, Eq. 19 plus the
head-row term recovers them and predicts the held-out points; Eq. 19 alone cannot."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

from edgespec.policies.estimator import BatchShape

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "llamacpp_compare.py"


def _script() -> ModuleType:
    """The script as a module of its own (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("llamacpp_compare_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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
