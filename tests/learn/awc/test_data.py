"""The AWC dataset: labels on a hand-built 2-scenario set, a scenario's runs and contexts,
the Table 2 exclusion, resumability of `edgespec train awc-data`."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from edgespec.learn.awc import command as awc_command
from edgespec.learn.awc import tables
from edgespec.learn.awc.data import (
    CONFIGURATIONS,
    DEFAULT_WEIGHTS,
    AwcTask,
    _contexts,
    label_scenarios,
    run_awc_scenario,
)
from edgespec.learn.awc.grid import (
    full_scenarios,
    is_reported_configuration,
    quick_scenarios,
    sample_scenario,
    scenario_dict,
)
from edgespec.policies.interfaces import WindowObservation
from edgespec.sweeps import executor as executor_module


def _configs(
    rows: list[tuple[int, int, float | None, float | None, float]], num_requests: int = 1
) -> dict[str, list[float | None]]:
    """Configuration rows, each with ``num_requests`` finished requests."""
    names = ("scenario_id", "gamma", "ttft_s", "tpot_s", "throughput_tokens_per_s")
    columns = {n: [r[i] for r in rows] for i, n in enumerate(names)}
    return {**columns, "num_requests": [num_requests] * len(rows)}


def test_labels_of_a_hand_built_two_scenario_dataset() -> None:
    configs = _configs(
        [
            # scenario 0: γ=4 has the best TPOT and throughput, fused the best TTFT
            (0, 1, 0.10, 0.050, 100.0),
            (0, 4, 0.20, 0.020, 300.0),
            (0, 8, 0.30, 0.030, 200.0),
            # scenario 1: fused wins on every metric; γ=2 finished nothing
            (1, 1, 0.10, 0.010, 500.0),
            (1, 2, None, None, 50.0),
            (1, 6, 0.40, 0.040, 100.0),
        ]
    )
    assert label_scenarios(configs, DEFAULT_WEIGHTS) == {0: 4, 1: 1}
    # scenario 0 under TTFT-only weights: fused (normalised TTFT 0 vs 0.5 vs 1)
    ttft_only = {"ttft": 1.0, "tpot": 0.0, "throughput": 0.0}
    assert label_scenarios(configs, ttft_only) == {0: 1, 1: 1}
    # equal scores: the smaller γ wins
    tie = _configs([(5, 9, 0.1, 0.01, 10.0), (5, 3, 0.1, 0.01, 10.0)])
    assert label_scenarios(tie, DEFAULT_WEIGHTS) == {5: 3}


def test_table2_configurations_are_kept_out() -> None:
    s = sample_scenario(0, 0, 10.0)
    reported = dataclasses.replace(s, num_targets=20, num_drafts=600, rtt_ms=10.0)
    assert is_reported_configuration(reported)
    assert not is_reported_configuration(dataclasses.replace(reported, rtt_ms=20.0))
    grid = full_scenarios(300, 0, 10.0)
    assert grid and not any(is_reported_configuration(x) for x in grid)
    assert sample_scenario(7, 0, 10.0) == sample_scenario(7, 0, 10.0)  # by id, seeded


def test_a_scenario_runs_every_configuration_and_samples_contexts() -> None:
    scenario = quick_scenarios(0)[2]  # a 4-GPU target: its runs finish requests in 6 s
    rows = run_awc_scenario(AwcTask(scenario, contexts_per_run=3))
    assert rows.configs["gamma"] == list(CONFIGURATIONS)
    assert sum(rows.configs["num_requests"]) > 0
    run_gamma = np.array(rows.contexts["run_gamma"])
    previous = np.array(rows.contexts["previous_gamma"])
    assert set(run_gamma) == set(CONFIGURATIONS)
    assert np.all(previous == run_gamma)  # fused contexts carry γ = 1
    assert np.all(np.array(rows.contexts["recent_acceptance"]) >= 0)
    assert all(np.bincount(run_gamma)[g] <= 3 for g in CONFIGURATIONS)
    assert run_awc_scenario(AwcTask(scenario, contexts_per_run=3)).contexts == rows.contexts


def test_awc_data_is_resumable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def serial(workers: int, engine: str = "local", address: str | None = None):  # type: ignore[no-untyped-def]
        assert engine == "ray"
        return executor_module.SerialExecutor()

    monkeypatch.setattr(executor_module, "make_executor", serial)
    real = awc_command.run_data

    parser = argparse.ArgumentParser()
    awc_command.add_arguments(parser.add_subparsers(dest="what"))
    args = parser.parse_args(["awc-data", "--quick", "--out", str(tmp_path), "--workers", "1"])
    args.workload_trace = None
    assert real(args) == 0
    first = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "contexts").iterdir()}
    assert len(first) == 4
    (tmp_path / "contexts" / "s00002.parquet").unlink()  # as if interrupted there
    import edgespec.learn.awc.data as data_module

    original = data_module.run_awc_scenario

    def counting(task: AwcTask):  # type: ignore[no-untyped-def]
        calls.append(task.scenario.scenario_id)
        return original(task)

    monkeypatch.setattr(data_module, "run_awc_scenario", counting)
    assert real(args) == 0
    assert calls == [2]  # only the unfinished scenario ran again
    again = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "contexts").iterdir()}
    assert {k: v for k, v in again.items() if k != "s00002.parquet"} == {
        k: v for k, v in first.items() if k != "s00002.parquet"
    }
    labels = tables.read_parquet_file(tmp_path / "labels.parquet")
    assert labels["scenario_id"] == [0, 1, 2, 3]


def test_labels_rank_missing_and_infinite_values_worst_and_throughput_reversed() -> None:
    throughput_only = {"ttft": 0.0, "tpot": 0.0, "throughput": 1.0}
    higher = _configs([(7, 2, 0.1, 0.01, 100.0), (7, 3, 0.1, 0.01, 300.0)])
    assert label_scenarios(higher, throughput_only) == {7: 3}  # higher throughput is better
    ttft_only = {"ttft": 1.0, "tpot": 0.0, "throughput": 0.0}
    # the one known TTFT normalises to 0 (best), the missing one to 1 (worst)
    missing = _configs([(8, 2, None, 0.01, 10.0), (8, 3, 0.5, 0.01, 10.0)])
    assert label_scenarios(missing, ttft_only) == {8: 3}
    # an infinite TTFT is worst and leaves the finite ones their spread: γ=3 has TTFT 0 and
    # TPOT 1 (score 0.5), γ=4 TTFT 1 and TPOT 0 (score 1), γ=2 TTFT 1 and TPOT 0 (score 1)
    infinite = _configs(
        [(9, 2, float("inf"), 0.01, 10.0), (9, 3, 0.5, 0.02, 10.0), (9, 4, 1.0, 0.01, 10.0)]
    )
    assert label_scenarios(infinite, {"ttft": 1.0, "tpot": 0.5, "throughput": 0.0}) == {9: 3}


def test_table2_exclusion_covers_both_draft_counts_and_quick_scenarios_are_small() -> None:
    s = sample_scenario(0, 0, 10.0)
    for drafts in (600, 1000):
        for rtt in (10.0, 30.0):
            reported = dataclasses.replace(s, num_targets=20, num_drafts=drafts, rtt_ms=rtt)
            assert is_reported_configuration(reported)
    quick = quick_scenarios(0)
    assert [q.scenario_id for q in quick] == [0, 1, 2, 3] and quick[0].num_drafts == 4
    assert all(q.num_targets == 1 and q.num_drafts <= 8 and q.duration_s == 6.0 for q in quick)


def test_scenario_dict_rate_and_lengths_only_for_gsm8k() -> None:
    s = dataclasses.replace(
        sample_scenario(3, 0, 10.0), dataset="cnndm", num_drafts=16, rate_per_draft=0.25,
        load="poisson",
    )  # fmt: skip
    lengths = ((10, 20), (30, 40))
    workload = scenario_dict(s, 4, lengths)["workload"]
    assert workload == {"kind": "poisson", "rate_per_s": 4.0, "dataset": "sharegpt"}
    gsm = scenario_dict(dataclasses.replace(s, dataset="gsm8k"), 1, lengths)
    assert gsm["mode"] == "fused" and gsm["workload"]["dataset"] == "gsm8k"
    assert (gsm["workload"]["prompt_tokens"], gsm["workload"]["output_tokens"]) == lengths
    assert gsm["fused_rounds"] == "cloud_only"
    closed = scenario_dict(dataclasses.replace(s, load="closed_loop"), 4, lengths)["workload"]
    assert closed == {"kind": "closed_loop", "dataset": "sharegpt", "think_time_s": 1.7,
                      "think_distribution": "lognormal", "think_cv": 0.6, "think_min_s": 0.22,
                      "ramp_s": 1.7}  # fmt: skip
    loads = {sample_scenario(i, 0, 10.0).load for i in range(40)}
    assert loads == {"poisson", "closed_loop"}  # both loads are drawn


def test_fused_contexts_carry_gamma_1_and_the_links_mean_round_trip() -> None:
    s = dataclasses.replace(sample_scenario(0, 0, 10.0), rtt_ms=30.0, jitter_ms=9.0)
    seen = [
        WindowObservation(previous_gamma=4, recent_acceptance=None, rtt_s=0.1),
        WindowObservation(previous_gamma=4, recent_acceptance=0.5, queue_depth=8, rtt_s=0.1),
    ]
    (fused,) = _contexts(seen, 1, AwcTask(s, contexts_per_run=5), None)
    assert fused[:3] == (8 / 12, 0.5, 30.0 + 2 * 9.0) and fused[4] == 1.0  # depth / cap 12
    assert np.isnan(fused[3])  # no TPOT observed yet
    (plain,) = _contexts(seen, 4, AwcTask(s, contexts_per_run=5), 0.7)
    assert plain[2] == 100.0 and plain[4] == 4.0


def test_cloud_only_contexts_carry_the_scenarios_distributed_acceptance() -> None:
    """Cloud-only rounds draft nothing, so they measure no acceptance: a fused run's
    contexts then carry the acceptance of the scenario's distributed run at fused_gamma
    (a distributed run's contexts never do)."""
    s = sample_scenario(0, 0, 10.0)
    seen = [
        WindowObservation(previous_gamma=0, recent_acceptance=None),  # before any round
        WindowObservation(previous_gamma=4, recent_acceptance=None, queue_depth=4),
    ]
    (fused,) = _contexts(seen, 1, AwcTask(s, contexts_per_run=5), 0.7)
    assert fused[:2] == (4 / 12, 0.7) and fused[4] == 1.0
    assert _contexts(seen, 4, AwcTask(s, contexts_per_run=5), 0.7) == []
    assert _contexts(seen, 1, AwcTask(s, contexts_per_run=5), None) == []
