"""The predictor study end to end on synthetic traces (every predictor, tiny searches)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgespec.learn.stop.evaluate import WasteSummary
from edgespec.learn.stop.report import study_markdown
from edgespec.learn.stop.study import (
    PREDICTORS,
    StudySettings,
    TheoremPoint,
    dominance_check,
    run_study,
)
from edgespec.learn.traces.records import TraceRecord


def synthetic_records(num: int, seed: int) -> list[TraceRecord]:
    """Acceptance follows confidence: a position is accepted when its confidence beats a
    uniform draw, so a good predictor exists but is imperfect."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(num):
        conf = rng.uniform(0, 1, 40)
        seq = tuple(int(c > u) for c, u in zip(conf, rng.uniform(0, 1, 40), strict=True))
        feats = tuple(
            (round(float(c), 4), round(float(3 * (1 - c)), 4), round(float(c / 2), 4), 2.5,
             round(float(min(1.0, c + 0.2)), 4))
            for c in conf
        )  # fmt: skip
        records.append(
            TraceRecord(
                request_id=f"s{i}",
                arrival_ms=0.0,
                prompt_tokens=10,
                output_tokens=40,
                drafter_id=0,
                slo_class="default",
                dataset="synthetic",
                draft_model="gemma3-270m-draft",
                target_model="gemma3-270m",
                gamma_max=4,
                acceptance_seq=seq,
                draft_features=feats,
            )
        )
    return records


def test_study_runs_every_predictor_and_checks_theorem_1() -> None:
    settings = StudySettings(mlp_trials=1, tree_trials=1, latency_calls=20, seed=1)
    study = run_study(synthetic_records(30, 0), settings)
    assert [p.name for p in study.predictors] == list(PREDICTORS)
    balance = study.balance
    assert balance["all"]["requests"] == 30
    parts = ("train", "validation", "test")
    assert sum(int(balance[p]["samples"]) for p in parts) == balance["all"]["samples"]
    for p in study.predictors:
        # confidence carries the signal: every predictor beats chance on held-out requests
        assert p.test.auc > 0.6, p
        assert p.test.tn + p.test.fp + p.test.fn + p.test.tp == balance["test"]["samples"]
        assert 0.0 <= p.threshold <= 1.0
        assert p.latency.num_calls == 20
        # the chosen cut is on its own plateau, its held-out FPR inside the plateau's range
        assert p.plateau.low_cut <= p.threshold <= p.plateau.high_cut and p.plateau.num_cuts >= 1
        assert p.plateau.test_fpr_min <= p.test.fpr <= p.plateau.test_fpr_max
    # each predictor at its own threshold and at the fixed grid
    assert len(study.theorem) >= 4 * 6
    dominance = study.to_json()["dominance"]
    assert dominance["dominating_pairs"] > 0
    # Not a strict guarantee: predictors start rounds at different positions, so the
    # per-r conditioning of Theorem 1 holds on different samples; nearly all pairs agree.
    assert dominance["theorem_holds"] >= 0.95 * dominance["dominating_pairs"]
    assert study.no_predictor.mean_wasted_sent > 0
    text = study_markdown(study, "edgespec train stop-predictor ...", "2026-11-23")
    assert "## Dataset (Table 8)" in text and "| mlp |" in text
    mlp = study.predictors[0].plateau
    assert f"| {mlp.test_fpr_min:.3f}–{mlp.test_fpr_max:.3f} ({mlp.num_cuts} cuts, " in text
    assert study.mlp.threshold == study.predictors[0].threshold


def test_dominance_counts_one_predictor_at_two_thresholds_apart() -> None:
    def point(name: str, fp: float, wasted: float) -> TheoremPoint:
        return TheoremPoint(name, 0.5, fp, WasteSummary(1, 10, wasted, wasted, 0.5, 2.0, (fp,)))

    # a → b and c → d are one predictor at two cuts; a/b → c/d are pairs of two, one of
    # which (b at FP 0.2 wasting 3.0 against c at FP 0.8 wasting 2.5) breaks Theorem 1
    points = [point("mlp", 0.1, 1.0), point("mlp", 0.2, 3.0), point("rf", 0.8, 2.5),
              point("rf", 0.9, 3.5)]  # fmt: skip
    assert dominance_check(points) == {
        "dominating_pairs": 4,
        "theorem_holds": 3,
        "same_predictor_pairs": 2,
        "same_predictor_holds": 2,
    }


def test_train_stop_predictor_command(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from edgespec.cli import main
    from edgespec.learn.traces.records import write_trace
    from edgespec.policies.stop_drafting import load_stop_policy

    traces = tmp_path / "traces"
    write_trace(traces / "synthetic.jsonl", synthetic_records(30, 2))
    out, report = tmp_path / "stop.json", tmp_path / "report"
    args = ["train", "stop-predictor", "--traces", str(traces), "--out", str(out),
            "--report-dir", str(report), "--mlp-trials", "1", "--tree-trials", "1",
            "--latency-calls", "5"]  # fmt: skip
    assert main(args) == 0
    policy = load_stop_policy(str(out))
    assert policy.metadata["dataset"]["requests"] == 30
    assert policy.metadata["test"]["tp"] + policy.metadata["test"]["fn"] > 0
    plateau = policy.metadata["threshold_plateau"]
    assert plateau["test_fpr_min"] <= policy.metadata["test"]["fpr"] <= plateau["test_fpr_max"]
    assert (report / "REPORT.md").read_text().startswith("# Rejection predictor study")
    missing = tmp_path / "nowhere"
    capsys.readouterr()
    rerun = ["train", "stop-predictor", "--traces", str(missing), "--out", str(out)]
    assert main(rerun) == 2  # the predictor just written is not replaced unasked
    assert capsys.readouterr().err.endswith(
        f"--out {out} already exists; give another --out, or --overwrite to replace it with the "
        "stop predictor\n"
    )
    assert main([*rerun, "--overwrite"]) == 2
    assert f"--traces {missing}: no such file or directory" in capsys.readouterr().err


def test_traces_by_bundled_name() -> None:
    """``--traces gemma3-270m-draft-train`` is the bundled set from any folder; a misspelt
    name is refused with the names there are and the closest one."""
    from edgespec.errors import UserInputError
    from edgespec.learn.stop.command import BUNDLED_TRACES, trace_files

    name = "gemma3-270m-draft-train"
    assert trace_files([Path(name)]) == [BUNDLED_TRACES / f"{name}.jsonl"]
    assert (BUNDLED_TRACES / f"{name}.jsonl").is_file()
    with pytest.raises(UserInputError) as info:
        trace_files([Path("gemma3-270m-draft-trian")])
    assert str(info.value) == (
        "--traces gemma3-270m-draft-trian: no such file or directory, nor a bundled trace set "
        f"({name}) (did you mean '{name}'?)"
    )
