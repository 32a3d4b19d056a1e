"""Markdown tables of a :class:`~edgespec.learn.stop.study.StopStudy`, laid out like WISP's
Tables 8, 4, 10 and 11, beside the paper's numbers, and Theorem 1's check."""

from __future__ import annotations

from edgespec.learn.stop.study import StopStudy
from edgespec.learn.stop.threshold import ThresholdPlateau

PAPER_TABLE8 = {"samples": 17510, "accepted": 12820, "rejected": 4690}
PAPER_TABLE4 = {  # Acc, AUC, Rec1, Spec, FPR, BalAcc
    "mlp": (0.7510, 0.7727, 0.8011, 0.5750, 0.4250, 0.6881),
    "lightgbm": (0.7431, 0.7939, 0.9396, 0.1404, 0.8596, 0.5400),
    "random_forest": (0.7459, 0.7964, 0.9396, 0.1517, 0.8483, 0.5457),
    "xgboost": (0.7528, 0.7978, 0.9322, 0.2022, 0.7978, 0.5672),
}
PAPER_TABLE11_RPI5 = {  # mean, median, p95, p99 (ms), Raspberry Pi 5
    "xgboost": (0.3484, 0.3405, 0.3595, 0.6226),
    "lightgbm": (0.6827, 0.6756, 0.6933, 0.7866),
    "random_forest": (42.6230, 44.4504, 45.4629, 45.7573),
    "mlp": (0.4590, 0.4552, 0.4733, 0.4831),
}


def plateau_text(plateau: ThresholdPlateau) -> str:
    """The held-out FPR range over the near-best cuts, with how many and where they are."""
    return (
        f"{plateau.test_fpr_min:.3f}–{plateau.test_fpr_max:.3f} ({plateau.num_cuts} cuts, "
        f"{plateau.low_cut:.3f}–{plateau.high_cut:.3f})"
    )


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def dataset_table(study: StopStudy) -> list[str]:
    lines = [
        _row(["set", "requests", "samples", "accepted", "rejected (first)", "accepted share"]),
        _row(["---"] * 6),
    ]
    p = PAPER_TABLE8
    share = p["accepted"] / p["samples"]
    lines.append(_row(["paper (Table 8)", "—", f"{p['samples']:,}", f"{p['accepted']:,}",
                       f"{p['rejected']:,}", f"{share:.2%}"]))  # fmt: skip
    for name, b in study.balance.items():
        lines.append(_row([name, f"{b['requests']}", f"{b['samples']:,}", f"{b['accepted']:,}",
                           f"{b['rejected']:,}", f"{float(b['accepted_share']):.2%}"]))  # fmt: skip
    return lines


def operating_table(study: StopStudy) -> list[str]:
    head = ["predictor", "threshold", "Acc.", "AUC", "Rec₁", "Spec.", "FPR", "BalAcc",
            "TN", "FP", "FN", "TP", "FPR at 0.5", "FPR over near-best cuts",
            "paper Acc/AUC/Rec₁/Spec/FPR/BalAcc"]  # fmt: skip
    lines = [_row(head), _row(["---"] * len(head))]
    for r in study.predictors:
        t = r.test
        paper = "/".join(f"{v:.3f}" for v in PAPER_TABLE4[r.name])
        lines.append(_row([
            r.name, f"{r.threshold:.3f}", f"{t.accuracy:.4f}", f"{t.auc:.4f}",
            f"{t.recall_accepted:.4f}", f"{t.specificity:.4f}", f"{t.fpr:.4f}",
            f"{t.balanced_accuracy:.4f}",
            f"{t.tn} ({t.tn / max(t.num_rejected, 1):.1%})",
            f"{t.fp} ({t.fp / max(t.num_rejected, 1):.1%})",
            f"{t.fn} ({t.fn / max(t.num_accepted, 1):.1%})",
            f"{t.tp} ({t.tp / max(t.num_accepted, 1):.1%})",
            f"{r.test_at_half.fpr:.4f}", plateau_text(r.plateau), paper,
        ]))  # fmt: skip
    return lines


def latency_table(study: StopStudy) -> list[str]:
    head = ["predictor", "calls", "mean", "median", "std", "min", "max", "p95", "p99",
            "paper RPi 5 mean/median/p95/p99"]  # fmt: skip
    lines = [_row(head), _row(["---"] * len(head))]
    for r in study.predictors:
        lat = r.latency
        paper = "/".join(f"{v:.3f}" for v in PAPER_TABLE11_RPI5[r.name])
        lines.append(_row([r.name, f"{lat.num_calls}"] + [
            f"{v:.4f}" for v in (lat.mean_ms, lat.median_ms, lat.std_ms, lat.min_ms,
                                 lat.max_ms, lat.p95_ms, lat.p99_ms)
        ] + [paper]))  # fmt: skip
    return lines


def theorem_table(study: StopStudy) -> list[str]:
    head = ["predictor", "threshold", "FPR at first rejection", "FP(r), r = 1..K",
            "E[W] sent (Eq. 26)", "wasted passes / round", "acceptance of sent", "AAL"]  # fmt: skip
    lines = [_row(head), _row(["---"] * len(head))]
    n = study.no_predictor
    lines.append(_row(["none (fixed K)", "—", "1", "1", f"{n.mean_wasted_sent:.3f}",
                       f"{n.mean_wasted_passes:.3f}", f"{n.acceptance_sent:.3f}",
                       f"{n.mean_accepted:.3f}"]))  # fmt: skip
    for t in sorted(study.theorem, key=lambda t: t.fpr_first_rejection):
        w = t.waste
        fp = ", ".join("–" if v != v else f"{v:.2f}" for v in w.fpr_by_r)
        lines.append(_row([t.name, f"{t.threshold:.3f}", f"{t.fpr_first_rejection:.3f}", fp,
                           f"{w.mean_wasted_sent:.3f}", f"{w.mean_wasted_passes:.3f}",
                           f"{w.acceptance_sent:.3f}", f"{w.mean_accepted:.3f}"]))  # fmt: skip
    return lines


def study_markdown(study: StopStudy, command: str, when: str) -> str:
    dom = study.to_json()["dominance"]
    parts = [
        "# Rejection predictor study",
        "",
        f"Command: `{command}` ({when}). Window K_max = {study.settings.k_max}; splits by "
        f"request {study.settings.split}; seed {study.settings.seed}.",
        "",
        "## Dataset (Table 8)",
        "",
        *dataset_table(study),
        "",
        "## Held-out operating points (Tables 4 and 10)",
        "",
        "Thresholds chosen on validation by maximum balanced accuracy (Youden's J), the same "
        "rule for every predictor. FPR over near-best cuts: the held-out FPR at every cut "
        "whose validation J is within one standard error of the best, cuts the rule cannot "
        "tell apart on this validation set.",
        "",
        *operating_table(study),
        "",
        "## Single-sample latency on this CPU, ms (Table 11)",
        "",
        *latency_table(study),
        "",
        "## Theorem 1: FPR at the first rejection vs wasted draft tokens (held-out requests)",
        "",
        f"Pairs of two predictors where one's FP(r) is ≤ the other's at every r: "
        f"{dom['dominating_pairs']}; E[W] ordered as Theorem 1 says in {dom['theorem_holds']} "
        f"of them. Apart, as no evidence: {dom['same_predictor_pairs']} pairs of one predictor "
        f"at two thresholds ({dom['same_predictor_holds']} ordered), where a higher cut keeps a "
        "subset of the positions and so, from any start, never wastes more.",
        "",
        *theorem_table(study),
        "",
    ]
    return "\n".join(parts)
