"""Where a profile's WISP Eq. 19 fit misses: per-category errors, padded- and executed-shape refits.

    edgespec profile --residuals runs/profile/gemma-report.json

Reads the ``NAME-report.json`` that ``edgespec profile`` writes. One point per grid
configuration, its median run (the lower median), as the fit uses. Prints, per grid
category and split, the MAPE and the mean signed error (predicted − measured, relative)
of the report's Eq. 19 fit (the coefficients its profile holds) and that fit's held-out
scores, then refits two models (unconstrained) on the training configurations and scores
them on the held-out ones: Eq. 19 (N_linear, N_interactions, N_cached, 1), which differs
from the written fit where it has a term clipped to 0, and a *padded* shape
(B·max L_new, B·max L_new·max L_total, B·max L_total, 1), what a batched forward pass
computes when it pads every row to the longest new-token count and the longest context.
A padded shape that fits much better than Eq. 19 says the backend pads where Eq. 19
assumes each request costs its own tokens (docs/PROFILE.md). A third refit is the
*executed* shape: the batch split into the passes the backend runs
(:func:`edgespec.runtime.backends.padding.pass_groups`), each pass B rows padded to its
longest L_new and L_total, with its vocabulary-logit rows
(:func:`edgespec.profiling.measure.logit_rows`, padded to the pass's most) and a cost per
pass: [Σ B·max L_new, Σ B·max L_new·max L_total, Σ B·max logit rows, passes, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgespec.errors import UserInputError
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.fit import WISP_TERMS, FitMetrics, FloatArray, metrics, ols, wisp_design
from edgespec.profiling.measure import logit_rows
from edgespec.profiling.report_file import read_report
from edgespec.runtime.backends.padding import pass_groups

Entries = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Point:
    """One configuration's median run: its category, split, (new, cached) per request."""

    category: str
    split: str
    entries: Entries
    time_s: float


@dataclass(frozen=True, slots=True)
class CategoryError:
    """Eq. 19's error on one (category, split): MAPE and mean signed error in percent."""

    category: str
    split: str
    count: int
    mape_pct: float
    bias_pct: float
    mean_time_s: float


def points(report: dict[str, Any]) -> list[Point]:
    """The report's samples reduced to one point per configuration (its median run)."""
    by_config: dict[int, list[dict[str, Any]]] = {}
    for s in report["samples"]:
        by_config.setdefault(int(s["config"]), []).append(s)
    out = []
    for index in sorted(by_config):
        runs = sorted(by_config[index], key=lambda s: float(s["time_s"]))
        s = runs[(len(runs) - 1) // 2]
        entries = tuple((int(n), int(c)) for n, c in s["entries"])
        out.append(Point(str(s["category"]), str(s["split"]), entries, float(s["time_s"])))
    return out


def additive_design(pts: Sequence[Point]) -> FloatArray:
    """Eq. 19's rows [N_linear, N_interactions, N_cached, 1]."""
    return wisp_design([BatchShape.of(p.entries) for p in pts])


def padded_design(pts: Sequence[Point]) -> FloatArray:
    """Rows [B·max L_new, B·max L_new·max L_total, B·max L_total, 1]."""
    rows = []
    for p in pts:
        size = len(p.entries)
        max_new = max(n for n, _ in p.entries)
        max_total = max(n + c for n, c in p.entries)
        rows.append([size * max_new, size * max_new * max_total, size * max_total, 1.0])
    return np.array(rows, dtype=np.float64)


EXECUTED_TERMS = ("row_s", "attention_s", "logit_row_s", "pass_s", "c_s")
"""The executed shape's coefficients, in :func:`executed_design`'s column order."""


def executed_design(pts: Sequence[Point]) -> FloatArray:
    """Rows [Σ B·max L_new, Σ B·max L_new·max L_total, Σ B·max logit rows, passes, 1] over
    the passes the backend splits each batch into (see the module docstring)."""
    rows = []
    for p in pts:
        row = [0.0, 0.0, 0.0, 0.0, 1.0]
        for group in pass_groups(p.entries):
            items = [p.entries[i] for i in group]
            size = len(items)
            max_new = max(n for n, _ in items)
            max_total = max(n + c for n, c in items)
            row[0] += size * max_new
            row[1] += size * max_new * max_total
            row[2] += size * max(logit_rows(e) for e in items)
            row[3] += 1
        rows.append(row)
    return np.array(rows, dtype=np.float64)


def category_errors(report: dict[str, Any]) -> list[CategoryError]:
    """Eq. 19's errors with the report's fitted coefficients, per (category, split)."""
    coef = report["wisp"]["coefficients"]
    values = np.array([float(coef[k]) for k in WISP_TERMS])
    pts = points(report)
    out = []
    for category in sorted({p.category for p in pts}):
        for split in ("train", "test"):
            sel = [p for p in pts if p.category == category and p.split == split]
            if not sel:
                continue
            y = np.array([p.time_s for p in sel])
            relative = (additive_design(sel) @ values - y) / y * 100.0
            out.append(
                CategoryError(
                    category,
                    split,
                    len(sel),
                    float(np.mean(np.abs(relative))),
                    float(np.mean(relative)),
                    float(y.mean()),
                )
            )
    return out


def written_fit(report: dict[str, Any]) -> FitMetrics:
    """Held-out metrics of the report's own (written, non-negative) Eq. 19 coefficients,
    the fit :func:`category_errors` breaks down: not its unconstrained refit's."""
    coef = report["wisp"]["coefficients"]
    values = np.array([float(coef[k]) for k in WISP_TERMS])
    test = [p for p in points(report) if p.split == "test"]
    return metrics(np.array([p.time_s for p in test]), additive_design(test) @ values)


def refits(report: dict[str, Any]) -> dict[str, FitMetrics]:
    """Held-out metrics of Eq. 19, the padded shape and the executed shape, each refitted on
    the training configurations (unconstrained least squares)."""
    pts = points(report)
    y = np.array([p.time_s for p in pts])
    train = np.array([p.split == "train" for p in pts])
    if train.all() or not train.any():
        raise ValueError("the report needs training and held-out configurations")
    out = {}
    for name, x in (
        ("Eq. 19 (additive)", additive_design(pts)),
        ("padded shape", padded_design(pts)),
        ("executed shape", executed_design(pts)),
    ):
        beta = ols(x[train], y[train])
        out[name] = metrics(y[~train], x[~train] @ beta)
    return out


def print_residuals(path: Path) -> int:
    """``edgespec profile --residuals REPORT``: print the per-category errors of the
    report's fit and its held-out scores, then each refit's."""
    report = read_report(path)
    try:
        fits = refits(report)
    except ValueError as exc:
        raise UserInputError(f"--residuals {path}: {exc}") from exc
    print(f"{'category':15} {'split':5} {'n':>3} {'MAPE %':>7} {'bias %':>7} {'mean s':>7}")
    for e in category_errors(report):
        print(
            f"{e.category:15} {e.split:5} {e.count:3} {e.mape_pct:7.1f} {e.bias_pct:+7.1f} "
            f"{e.mean_time_s:7.3f}"
        )
    num_train = sum(1 for p in points(report) if p.split == "train")
    print(f"written Eq. 19 fit (the profile's coefficients): {_scores(written_fit(report))}")
    print(f"refitted on the {num_train} training configurations (least squares, unconstrained):")
    for name, m in fits.items():
        print(f"{name}: {_scores(m)}")
    return 0


def _scores(m: FitMetrics) -> str:
    """``held-out R² 0.953, MAE 118 ms, MAPE 8.9% (50 configurations)`` (MAE to 3 digits)."""
    return (
        f"held-out R² {m.r2:.3f}, MAE {m.mae_s * 1e3:.3g} ms, MAPE {m.mape_pct:.1f}% "
        f"({m.num_samples} configurations)"
    )
