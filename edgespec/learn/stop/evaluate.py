"""Evaluating rejection predictors: Tables 4 and 10 (operating point), Table 11 (latency)
and Theorem 1's check (lower FPR at the first rejection → fewer wasted draft tokens); the
threshold rule is :mod:`edgespec.learn.stop.threshold`.

Every predictor is seen as a function ``scores(features) -> P(accepted)`` (numpy in, numpy
out), so the MLP's numpy inference and the tree libraries are measured the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.policies.stop_drafting import draft_passes, kept_prefix

Scorer = Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """A predictor at one threshold on one labelled set (label 1 = accepted).

    ``fpr`` is Pr(predicted accepted | first rejection), Theorem 1's FP_θ pooled over r;
    ``recall_accepted`` (Rec₁) and ``specificity`` = 1 − fpr as in Table 4; the confusion
    counts are Table 10's (TN, FP on rejected rows; FN, TP on accepted rows).
    """

    threshold: float
    accuracy: float
    auc: float
    recall_accepted: float
    specificity: float
    fpr: float
    balanced_accuracy: float
    tn: int
    fp: int
    fn: int
    tp: int

    @property
    def num_rejected(self) -> int:
        return self.tn + self.fp

    @property
    def num_accepted(self) -> int:
        return self.fn + self.tp


def roc_auc(labels: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> float:
    """Area under the ROC curve (Mann–Whitney U with average ranks for ties)."""
    positive = labels == 1
    num_pos, num_neg = int(positive.sum()), int((~positive).sum())
    if num_pos == 0 or num_neg == 0:
        raise ValueError("AUC needs both classes")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    u = ranks[positive].sum() - num_pos * (num_pos + 1) / 2.0
    return float(u / (num_pos * num_neg))


def operating_point(
    labels: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], threshold: float
) -> OperatingPoint:
    """Metrics of predicting "accepted" when score ≥ ``threshold``."""
    predicted = scores >= threshold
    accepted = labels == 1
    tp = int((predicted & accepted).sum())
    fn = int((~predicted & accepted).sum())
    fp = int((predicted & ~accepted).sum())
    tn = int((~predicted & ~accepted).sum())
    recall = tp / (tp + fn) if tp + fn else 0.0
    fpr = fp / (fp + tn) if fp + tn else 0.0
    return OperatingPoint(
        threshold=threshold,
        accuracy=(tp + tn) / len(labels),
        auc=roc_auc(labels, scores),
        recall_accepted=recall,
        specificity=1.0 - fpr,
        fpr=fpr,
        balanced_accuracy=(recall + 1.0 - fpr) / 2.0,
        tn=tn,
        fp=fp,
        fn=fn,
        tp=tp,
    )


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """Single-sample latency over ``num_calls`` calls, milliseconds (Table 11's columns)."""

    num_calls: int
    mean_ms: float
    median_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    p95_ms: float
    p99_ms: float


def single_sample_latency(
    scorer: Scorer, rows: npt.NDArray[np.float64], num_calls: int = 1000, warmup: int = 20
) -> LatencyStats:
    """Time ``scorer`` on one row at a time (cycling through ``rows``), as a device would
    call it once per drafted token."""
    for i in range(warmup):
        scorer(rows[i % len(rows)][None, :])
    times = np.empty(num_calls, dtype=np.float64)
    for i in range(num_calls):
        row = rows[i % len(rows)][None, :]
        start = time.perf_counter()
        scorer(row)
        times[i] = (time.perf_counter() - start) * 1e3
    return LatencyStats(
        num_calls=num_calls,
        mean_ms=float(times.mean()),
        median_ms=float(np.median(times)),
        std_ms=float(times.std()),
        min_ms=float(times.min()),
        max_ms=float(times.max()),
        p95_ms=float(np.percentile(times, 95)),
        p99_ms=float(np.percentile(times, 99)),
    )


@dataclass(frozen=True, slots=True)
class WasteSummary:
    """Replay of held-out requests with a stop predictor at window ``k_max``.

    ``mean_wasted_sent``: E[W_θ] per round, W_θ = (K_θ − L)⁺ in sent tokens (Eq. 26);
    ``mean_wasted_passes``: draft passes not accepted per round (the stopped token's pass
    included); ``fpr_by_r``: FP_θ(r) for r = 1..k_max (Theorem 1: Pr(Ẑ_r = 1 | R = r)),
    NaN where no round had its first rejection at r."""

    k_max: int
    num_rounds: int
    mean_wasted_sent: float
    mean_wasted_passes: float
    acceptance_sent: float
    mean_accepted: float
    fpr_by_r: tuple[float, ...]


def replay_with_stops(
    sequences: Sequence[Sequence[int]], keeps: Sequence[npt.NDArray[np.bool_]], k_max: int
) -> WasteSummary:
    """Run every request's rounds with the predictor's per-position ``keeps`` (greedy):
    a round at ``s`` sends K_θ = kept_prefix(keep, s, γ), accepts min(L, K_θ), commits
    that plus the target's token. After a round's first rejection the decisions on the
    target's prefix stand in for those on the draft's own tokens (the training traces carry
    no ``rejection_features``), which changes K_θ but never L or FP(r)."""
    rounds = wasted_sent = wasted_passes = sent_total = accepted_total = 0
    hits = np.zeros(k_max, dtype=np.int64)
    firsts = np.zeros(k_max, dtype=np.int64)
    for seq, keep in zip(sequences, keeps, strict=True):
        n, start = len(seq), 0
        while start < n:
            gamma = min(k_max, n - start - 1)
            run = 0
            while run < gamma and seq[start + run]:
                run += 1
            sent = kept_prefix(keep, start, gamma) if gamma > 0 else 0
            if run < gamma:  # a first rejection at r = run + 1 (1-based)
                firsts[run] += 1
                hits[run] += int(bool(keep[start + run]))
            accepted = min(run, sent)
            passes = draft_passes(sent, gamma) if gamma > 0 else 0
            rounds += 1
            wasted_sent += max(sent - run, 0)
            wasted_passes += passes - accepted
            sent_total += sent
            accepted_total += accepted
            start += accepted + 1
    fpr = tuple(float(h / f) if f else float("nan") for h, f in zip(hits, firsts, strict=True))
    return WasteSummary(
        k_max=k_max,
        num_rounds=rounds,
        mean_wasted_sent=wasted_sent / rounds if rounds else 0.0,
        mean_wasted_passes=wasted_passes / rounds if rounds else 0.0,
        acceptance_sent=accepted_total / sent_total if sent_total else 0.0,
        mean_accepted=accepted_total / rounds if rounds else 0.0,
        fpr_by_r=fpr,
    )
