"""Does splitting padded passes make WISP Eq. 19 fit the backend? Two profiles, same grid.

    python scripts/profile_split_ab.py [SCALE] [THREADS] [both|split|padded]

Profiles Gemma 3 270M twice on the App. C grid scaled by SCALE (as `edgespec profile
--scale`; 1 warm-up + 1 run per configuration, no drafter): with `TransformersTarget`'s
default splitting of widely different shapes into separate passes, then with one padded
pass per batch. Prints each held-out fit and the per-category mean signed error.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from time import perf_counter

import numpy as np
import torch

from edgespec.learn.profile import GridSpec, design_grid
from edgespec.learn.profile_run import median_runs, profile_pair
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.loading import load_model_and_tokenizer


def main() -> None:
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
    torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    base = GridSpec()
    spec = replace(
        base,
        cold_totals=tuple(max(2, round(t * scale)) for t in base.cold_totals),
        totals=tuple(max(max(base.new_tokens) + 1, round(t * scale)) for t in base.totals),
        warmup_runs=1,
        runs=1,
    )
    grid = design_grid(spec)
    model = load_model_and_tokenizer("gemma3-270m")[0]
    which = sys.argv[3] if len(sys.argv) > 3 else "both"
    variants = {"both": (True, False), "split": (True,), "padded": (False,)}[which]
    for split in variants:
        start = perf_counter()
        backend = TransformersTarget(model, split_padded_batches=split)
        result = profile_pair("gemma3-270m", model, backend, spec, num_bootstrap=200)
        fit, t = result.wisp, result.wisp.test
        coeffs = ", ".join(f"{n} {v:.3g}" for n, v in zip(fit.names, fit.values, strict=True))
        print(f"split={split} ({perf_counter() - start:.0f} s): held-out R² {t.r2:.3f}, "
              f"MAE {t.mae_s * 1e3:.0f} ms, MAPE {t.mape_pct:.1f}%; {coeffs}")  # fmt: skip
        values = np.array(fit.values)
        by_category: dict[str, list[float]] = {}
        for s in median_runs(result.samples):
            shape = s.shape
            x = [shape.num_linear, shape.num_interactions, shape.num_cached, 1.0]
            error = (float(np.dot(values, x)) - s.time_s) / s.time_s * 100
            by_category.setdefault(grid[s.config_index].category, []).append(error)
        print("  mean signed error by category: " + ", ".join(
            f"{c} {np.mean(e):+.1f}% (MAPE {np.mean(np.abs(e)):.1f}%)"
            for c, e in sorted(by_category.items())
        ))  # fmt: skip


if __name__ == "__main__":
    main()
