"""The whole predictor study of WISP §5.4 / App. B on one pair's traces: dataset (Table 8),
the MLP and three tree baselines trained and thresholded alike, their operating points on
held-out requests (Tables 4 and 10), single-sample latency (Table 11), and Theorem 1's check.

``run_study`` is pure apart from the time it takes: records in, a :class:`StopStudy` out.
``edgespec train stop-predictor`` (stop_command.py) and ``edgespec reproduce wisp`` call it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.learn.stop.baselines import search_tree
from edgespec.learn.stop.data import (
    StopDataset,
    build_dataset,
    require_both_labels,
    split_by_request,
)
from edgespec.learn.stop.evaluate import (
    LatencyStats,
    OperatingPoint,
    Scorer,
    WasteSummary,
    operating_point,
    replay_with_stops,
    single_sample_latency,
)
from edgespec.learn.stop.threshold import ThresholdPlateau, threshold_plateau, youden_threshold
from edgespec.learn.stop.train import search_mlp
from edgespec.learn.traces.records import TraceRecord
from edgespec.policies.stop_drafting import MlpStopPolicy

PREDICTORS = ("mlp", "lightgbm", "random_forest", "xgboost")
THEOREM_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
"""Thresholds (besides each predictor's operating one) at which Theorem 1 is checked."""


@dataclass(frozen=True, slots=True)
class StudySettings:
    k_max: int = 4
    split: tuple[float, float, float] = (0.7, 0.15, 0.15)
    mlp_trials: int = 8
    mlp_max_epochs: int = 60
    tree_trials: int = 6
    latency_calls: int = 1000
    seed: int = 0


@dataclass(frozen=True, slots=True)
class PredictorResult:
    """One predictor: its chosen hyper-parameters, the threshold picked on validation,
    its held-out operating point there and at 0.5, the held-out FPR range over the cuts
    the rule cannot tell apart on validation (``plateau``), and its latency."""

    name: str
    params: dict[str, Any]
    threshold: float
    test: OperatingPoint
    test_at_half: OperatingPoint
    plateau: ThresholdPlateau
    latency: LatencyStats


@dataclass(frozen=True, slots=True)
class TheoremPoint:
    """One (predictor, threshold) replayed on the held-out requests."""

    name: str
    threshold: float
    fpr_first_rejection: float
    waste: WasteSummary


@dataclass(frozen=True, slots=True, eq=False)
class StopStudy:
    settings: StudySettings
    balance: dict[str, dict[str, float | int]]
    predictors: tuple[PredictorResult, ...]
    theorem: tuple[TheoremPoint, ...]
    no_predictor: WasteSummary
    mlp: MlpStopPolicy

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": dataclasses.asdict(self.settings),
            "balance": self.balance,
            "predictors": [dataclasses.asdict(p) for p in self.predictors],
            "theorem": [dataclasses.asdict(t) for t in self.theorem],
            "no_predictor": dataclasses.asdict(self.no_predictor),
            "dominance": dominance_check(self.theorem),
        }


def _held_out_sequences(
    records: Sequence[TraceRecord], test: StopDataset
) -> tuple[list[tuple[int, ...]], list[npt.NDArray[np.float64]]]:
    indices = sorted(set(test.groups.tolist()))
    seqs = [records[i].acceptance_seq for i in indices]
    feats = [np.asarray(records[i].draft_features, dtype=np.float64) for i in indices]
    return seqs, feats


def dominance_check(points: Sequence[TheoremPoint]) -> dict[str, int]:
    """Theorem 1 on every ordered pair (θ', θ) whose FP_θ'(r) ≤ FP_θ(r) at every r where
    both are defined: count the pairs and those where E[W_θ'] ≤ E[W_θ] holds, pairs of two
    predictors apart from pairs of one predictor at two thresholds. The latter are no
    evidence: a higher cut of the same scores keeps a subset of the positions, so from any
    start its round sends no more and wastes no more (only where rounds start differs)."""
    pairs = holds = same_pairs = same_holds = 0
    for a in points:
        for b in points:
            if a is b:
                continue
            fa, fb = a.waste.fpr_by_r, b.waste.fpr_by_r
            both = [
                (x, y) for x, y in zip(fa, fb, strict=True) if not (math.isnan(x) or math.isnan(y))
            ]
            if not both or not all(x <= y for x, y in both) or all(x == y for x, y in both):
                continue
            held = int(a.waste.mean_wasted_sent <= b.waste.mean_wasted_sent + 1e-12)
            if a.name == b.name:
                same_pairs, same_holds = same_pairs + 1, same_holds + held
            else:
                pairs, holds = pairs + 1, holds + held
    return {
        "dominating_pairs": pairs,
        "theorem_holds": holds,
        "same_predictor_pairs": same_pairs,
        "same_predictor_holds": same_holds,
    }


def run_study(
    records: Sequence[TraceRecord],
    settings: StudySettings,
    log: Callable[[str], None] = lambda _: None,
) -> StopStudy:
    """Build the dataset, train and evaluate every predictor (see the module docstring).
    A ``ValueError`` before any training when the records give no split of at least three
    requests, or a split without a first rejection or an accepted position."""
    data = build_dataset(records, settings.k_max)
    train, val, test = split_by_request(data, settings.split, settings.seed)
    require_both_labels((("training", train), ("validation", val), ("test", test)))
    balance = {
        name: part.balance()
        for name, part in (("all", data), ("train", train), ("validation", val), ("test", test))
    }
    log(f"dataset: {balance['all']}")
    mlp, scorers = _train_predictors(train, val, settings, log)
    results, theorem = [], []
    seqs, feats = _held_out_sequences(records, test)
    for name in PREDICTORS:
        scorer, params = scorers[name]
        result = _evaluate(name, scorer, params, val, test, settings)
        results.append(result)
        held_scores, scores = [scorer(f) for f in feats], scorer(test.features)
        for cut in sorted({result.threshold, *THEOREM_THRESHOLDS}):
            keeps = [s >= cut for s in held_scores]
            waste = replay_with_stops(seqs, keeps, settings.k_max)
            fpr = operating_point(test.labels, scores, cut).fpr
            theorem.append(TheoremPoint(name, cut, fpr, waste))
        test_point = result.test
        log(f"{name}: threshold {result.threshold:.3f}, held-out AUC {test_point.auc:.3f}, "
            f"FPR {test_point.fpr:.3f}")  # fmt: skip
    never = [np.ones(len(s), dtype=np.bool_) for s in seqs]
    return StopStudy(
        settings=settings,
        balance=balance,
        predictors=tuple(results),
        theorem=tuple(theorem),
        no_predictor=replay_with_stops(seqs, never, settings.k_max),
        mlp=mlp.with_threshold(results[0].threshold),
    )


def _train_predictors(
    train: StopDataset, val: StopDataset, settings: StudySettings, log: Callable[[str], None]
) -> tuple[MlpStopPolicy, dict[str, tuple[Scorer, dict[str, Any]]]]:
    """The MLP (searched over ``settings.mlp_trials``) and the tree baselines, each as a
    scorer with its chosen hyper-parameters, by name in :data:`PREDICTORS` order."""
    mlp = search_mlp(
        train,
        val,
        settings.mlp_trials,
        settings.seed,
        max_epochs=settings.mlp_max_epochs,
        on_trial=lambda i, t: log(f"mlp trial {i}: {t.settings} val loss {t.validation_loss:.4f}"),
    )
    scorers: dict[str, tuple[Scorer, dict[str, Any]]] = {}
    scorers["mlp"] = (mlp.policy.accept_probability, dataclasses.asdict(mlp.settings))
    for name in PREDICTORS[1:]:
        tree = search_tree(
            name,
            train,
            val,
            settings.tree_trials,
            settings.seed,
            on_trial=lambda i, t: log(f"{t.name} trial {i}: val loss {t.validation_log_loss:.4f}"),
        )
        scorers[name] = (tree.scores, tree.params)
    return mlp.policy, scorers


def _evaluate(
    name: str,
    scorer: Scorer,
    params: dict[str, Any],
    val: StopDataset,
    test: StopDataset,
    settings: StudySettings,
) -> PredictorResult:
    """One predictor thresholded on validation (Youden), then measured on the test rows."""
    val_scores = scorer(val.features)
    threshold = youden_threshold(val.labels, val_scores)
    scores = scorer(test.features)
    return PredictorResult(
        name=name,
        params=params,
        threshold=threshold,
        test=operating_point(test.labels, scores, threshold),
        test_at_half=operating_point(test.labels, scores, 0.5),
        plateau=threshold_plateau(val.labels, val_scores, test.labels, scores),
        latency=single_sample_latency(scorer, test.features, settings.latency_calls),
    )
