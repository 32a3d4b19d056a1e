"""Predictor metrics, latency and the wasted-token replay, on hand-built cases."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.learn.stop.evaluate import (
    operating_point,
    replay_with_stops,
    roc_auc,
    single_sample_latency,
)


def test_operating_point_counts_and_rates() -> None:
    labels = np.array([1, 1, 1, 1, 0, 0, 0])
    scores = np.array([0.9, 0.8, 0.4, 0.7, 0.6, 0.2, 0.1])
    p = operating_point(labels, scores, 0.5)
    assert (p.tn, p.fp, p.fn, p.tp) == (2, 1, 1, 3)
    assert p.recall_accepted == 0.75
    assert math.isclose(p.fpr, 1 / 3) and math.isclose(p.specificity, 2 / 3)
    assert math.isclose(p.accuracy, 5 / 7)
    assert math.isclose(p.balanced_accuracy, (0.75 + 2 / 3) / 2)
    # AUC: of 12 (accepted, rejected) pairs, the accepted one scores higher in 11
    assert math.isclose(p.auc, 11 / 12)


def test_auc_counts_ties_as_half() -> None:
    assert roc_auc(np.array([1, 0]), np.array([0.5, 0.5])) == 0.5
    assert roc_auc(np.array([1, 0, 1]), np.array([0.9, 0.5, 0.5])) == 0.75


def test_replay_with_stops_hand_built() -> None:
    seq = (1, 1, 0, 1, 1, 1, 1, 0, 1, 1)
    keep = np.array([1, 0, 1, 1, 1, 1, 1, 1, 1, 1], dtype=bool)
    # round at 0, γ=4: run 2 (positions 0,1), predictor stops at 1 → sent 1, accepted 1,
    #   passes 2 (the stopped token drafted), commits 2 → next at 2
    # round at 2, γ=4: first rejection at r=1 (position 2), kept (a false alarm):
    #   sent: positions 2..5 kept → 4; accepted 0; W = 4; passes 4; commits 1 → at 3
    # round at 3, γ=4: run 4 (3..6); sent 4, accepted 4, commits 5 → at 8
    # round at 8, γ=min(4, 10-8-1)=1: run 1; sent 1, accepted 1, commits 2 → done
    w = replay_with_stops([seq], [keep], k_max=4)
    assert w.num_rounds == 4
    assert w.mean_wasted_sent == (0 + 4 + 0 + 0) / 4
    assert w.mean_wasted_passes == ((2 - 1) + (4 - 0) + 0 + 0) / 4
    assert w.acceptance_sent == (1 + 0 + 4 + 1) / (1 + 4 + 4 + 1)
    assert w.mean_accepted == 6 / 4
    # FP(r) = Pr(Ẑ_r = 1 | R = r), Ẑ defined at every position (Theorem 1): round 1's
    # true first rejection is at r=3 (position 2, kept), round 2's at r=1 (kept)
    assert w.fpr_by_r[0] == 1.0 and w.fpr_by_r[2] == 1.0
    assert math.isnan(w.fpr_by_r[1]) and math.isnan(w.fpr_by_r[3])


def test_replay_without_stops_is_fixed_window() -> None:
    seq = (1, 1, 0, 1, 1, 1, 1, 0, 1, 1)
    w = replay_with_stops([seq], [np.ones(10, dtype=bool)], k_max=4)
    # rounds: at 0 → L=2 (W=2), at 3 → L=4, at 8 → γ=1, L=1
    assert w.num_rounds == 3
    assert w.mean_wasted_sent == 2 / 3
    assert w.fpr_by_r[2] == 1.0


def test_latency_stats_are_ordered() -> None:
    stats = single_sample_latency(lambda x: x[:, 0], np.ones((3, 5)), num_calls=50, warmup=2)
    assert stats.num_calls == 50
    assert stats.min_ms <= stats.median_ms <= stats.p95_ms <= stats.p99_ms <= stats.max_ms


def test_operating_point_counts_a_score_at_the_threshold_as_accepted() -> None:
    p = operating_point(np.array([1, 0, 1]), np.array([0.5, 0.2, 0.4]), 0.5)
    assert (p.tn, p.fp, p.fn, p.tp) == (1, 0, 1, 1)


def test_auc_refuses_a_single_class() -> None:
    for labels in (np.array([1, 1]), np.array([0, 0])):
        with pytest.raises(ValueError, match="AUC needs both classes"):
            roc_auc(labels, np.array([0.2, 0.7]))


def test_latency_stats_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake clock makes call i take i + 1 ms: the stats of 1..100 ms."""
    clock = iter(t for i in range(100) for t in (10.0 * i, 10.0 * i + (i + 1) / 1e3))
    monkeypatch.setattr("edgespec.learn.stop.evaluate.time.perf_counter", lambda: next(clock))
    seen: list[float] = []

    def scorer(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        assert x.shape == (1, 2)
        seen.append(float(x[0, 0]))
        return x[:, 0]

    rows = np.array([[0.0, 9.0], [1.0, 9.0], [2.0, 9.0]])
    stats = single_sample_latency(scorer, rows, num_calls=100, warmup=2)
    assert seen[:5] == [0.0, 1.0, 0.0, 1.0, 2.0] and len(seen) == 102  # 2 warm-ups, cycling
    durations = np.arange(1.0, 101.0)
    assert stats.num_calls == 100
    assert stats.mean_ms == pytest.approx(50.5) and stats.median_ms == pytest.approx(50.5)
    assert stats.std_ms == pytest.approx(float(np.sqrt((100**2 - 1) / 12)))
    assert (stats.min_ms, stats.max_ms) == pytest.approx((1.0, 100.0))
    assert stats.p95_ms == pytest.approx(float(np.percentile(durations, 95)))  # 95.05
    assert stats.p99_ms == pytest.approx(99.01)
