"""Where does a profile's WISP Eq. 19 fit miss? Per-category errors, and a padded-shape fit.

    python scripts/profile_residuals.py runs/profile_full/gemma-report.json

Reads the report `edgespec profile` writes. Prints, per grid category and split, the MAPE
and mean signed error of the fitted Eq. 19 (coefficients as fitted, before clipping), then
refits on the training configurations two models and scores them on the held-out ones:
Eq. 19 (N_linear, N_interactions, N_cached, 1) and a *padded* shape
(B·max L_new, B·max L_new·max L_total, B·max L_total, 1): what a batched forward that pads
every row to the longest new-token count and the longest context computes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from edgespec.policies.estimator import BatchShape


def features(entries: list[tuple[int, int]]) -> tuple[list[float], list[float]]:
    shape = BatchShape.of(entries)
    size = len(entries)
    max_new = max(n for n, _ in entries)
    max_total = max(n + c for n, c in entries)
    additive = [shape.num_linear, shape.num_interactions, shape.num_cached, 1.0]
    padded = [size * max_new, size * max_new * max_total, size * max_total, 1.0]
    return [float(x) for x in additive], [float(x) for x in padded]


def refit(x: Any, y: Any, train: Any, name: str) -> None:
    coef, *_ = np.linalg.lstsq(x[train], y[train], rcond=None)
    test = ~train
    pred, truth = x[test] @ coef, y[test]
    r2 = 1 - np.sum((truth - pred) ** 2) / np.sum((truth - truth.mean()) ** 2)
    mape = np.mean(np.abs(pred - truth) / truth) * 100
    mae_ms = np.mean(np.abs(pred - truth)) * 1e3
    print(f"{name}: held-out R² {r2:.3f}, MAE {mae_ms:.0f} ms, MAPE {mape:.1f}%")


def main() -> None:
    with open(sys.argv[1]) as f:
        report = json.load(f)
    coef = report["wisp"]["coefficients"]
    values = np.array([coef[k] for k in ("a_s", "b_compute_s", "b_read_s", "c_s")])
    rows = []
    for s in report["samples"]:
        additive, padded = features([(int(n), int(c)) for n, c in s["entries"]])
        rows.append((s["category"], s["split"], s["time_s"], additive, padded))
    print(f"{'category':15} {'split':5} {'n':>3} {'MAPE %':>7} {'bias %':>7} {'mean s':>7}")
    for category in sorted({r[0] for r in rows}):
        for split in ("train", "test"):
            sel = [r for r in rows if r[0] == category and r[1] == split]
            if not sel:
                continue
            y = np.array([r[2] for r in sel])
            pred = np.array([r[3] for r in sel]) @ values
            mape, bias = np.mean(np.abs(pred - y) / y) * 100, np.mean((pred - y) / y) * 100
            print(f"{category:15} {split:5} {len(sel):3} {mape:7.1f} {bias:+7.1f} {y.mean():7.3f}")
    y = np.array([r[2] for r in rows])
    train = np.array([r[1] == "train" for r in rows])
    refit(np.array([r[3] for r in rows]), y, train, "Eq. 19 (additive)")
    refit(np.array([r[4] for r in rows]), y, train, "padded shape")


if __name__ == "__main__":
    main()
