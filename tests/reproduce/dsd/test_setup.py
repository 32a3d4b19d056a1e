"""The scenario dicts every DSD claim runs: the plan covers each claim, the paper's fleet and
closed-loop workload, and the compat mode's simplifications; each dict is valid."""

from __future__ import annotations

from dataclasses import replace

import pytest

from edgespec.reproduce.dsd.runs import (
    CROSSOVER_MODES,
    LAB_BOUNDS,
    VARIANT_MODES,
    DsdPlan,
    batching_name,
    crossover_name,
    lab_bound_name,
    plan_scenarios,
    routing_name,
    stack_name,
)
from edgespec.reproduce.dsd.setup import (
    COST_MODES,
    STACKS,
    DsdSetup,
    RoundMode,
    device_pools,
    scenario,
    target_counts,
)


def test_plan_scenarios_cover_every_claim() -> None:
    quick = DsdPlan.quick()
    names = set(plan_scenarios(quick))
    assert {stack_name(s) for s in STACKS} <= names
    assert {crossover_name(m, r) for m in CROSSOVER_MODES for r in (10.0, 60.0, 120.0)} <= names
    variant = {crossover_name(m, r, variant=True) for m in VARIANT_MODES for r in (10.0, 120.0)}
    assert variant <= names
    assert routing_name("round_robin", 1200) in names and batching_name("lab", 400) in names
    assert {lab_bound_name(b, n) for b in LAB_BOUNDS for n in (400, 1200)} <= names
    assert len(names) == 5 + 3 * 3 + 2 * 2 + 3 + 2 * 4 + 2 * 4  # D7: FIFO, LAB, 4 bounds
    assert len(plan_scenarios(DsdPlan.full())) == 5 + 11 * 3 + 8 * 2 + 3 * 4 * 3 + 7 * 8
    # one batch pricing, chosen once: every run prices padded batches
    for name, data in plan_scenarios(quick).items():
        assert {s["batch_pricing"] for s in data["auto_topology"]["servers"]} == {"padded"}, name
    bounded = plan_scenarios(quick)
    assert bounded["batching-lab-bound2-400"]["policies"]["batching"] == {
        "name": "lab", "params": {"max_length_ratio": 2.0},
    }  # fmt: skip
    assert bounded["batching-lab-boundnone-1200"]["policies"]["batching"] == {
        "name": "lab", "params": {"max_length_ratio": None},
    }  # fmt: skip
    assert bounded["batching-lab-400"]["policies"]["batching"]["params"] == {
        "max_length_ratio": 1.5
    }
    # each cost mode runs the same scenarios under the same names
    for mode in COST_MODES:
        planned = plan_scenarios(quick.in_mode(mode))
        assert set(planned) == names
        assert all(data["name"] == name for name, data in planned.items())
    assert quick.in_mode("dsdsim_compat").setup == replace(quick.setup, cost_mode="dsdsim_compat")
    assert quick.in_mode("dsdsim_compat").in_mode("physical") == quick


def test_fleet_is_the_papers_4_gpu_servers_tp1_the_variant_scaled_by_the_share() -> None:
    assert target_counts(1.0) == [7, 7, 6]
    assert target_counts(0.25) == [2, 2, 1]
    assert target_counts(0.01) == [1, 1, 1]  # at least one of each
    pools = device_pools(601)
    assert sum(p["count"] for p in pools) == 601 and len(pools) == 6
    assert [p["count"] for p in pools] == [101, 100, 100, 100, 100, 100]
    data = scenario(DsdSetup(), name="x", dataset="gsm8k", num_drafts=600, rtt_ms=10.0)
    assert data["auto_topology"]["servers"] == [
        {"name": f"{m}-{hw}", "count": n, "target_model": m, "hardware": hw, "max_batch_size": 12,
         "batch_pricing": "padded"}
        for m, hw, n in (("llama2-70b", "4xa100", 7), ("qwen-72b", "4xh100", 7),
                         ("llama3-70b", "4xa6000", 6))
    ]  # fmt: skip
    tp1 = scenario(replace(DsdSetup(), fleet="dsdsim_tp1"), name="x", dataset="gsm8k",
                   num_drafts=600, rtt_ms=10.0)  # fmt: skip
    assert [s["hardware"] for s in tp1["auto_topology"]["servers"]] == ["a100", "h100", "a6000"]
    variant = plan_scenarios(DsdPlan.quick())["crossover-tp1-cloud_only-rtt120"]
    assert [s["hardware"] for s in variant["auto_topology"]["servers"]] == [
        "a100", "h100", "a6000",
    ]  # fmt: skip
    assert variant["mode"] == "fused" and variant["links"]["default"]["rtt_ms"] == 120.0
    assert sum(p["count"] for p in data["auto_topology"]["devices"]) == 600
    assert {p["hardware"] for p in data["auto_topology"]["devices"]} == {"a40", "v100"}
    quarter = replace(DsdSetup(), fleet_share=0.25)
    for drafts, scaled in ((600, 150), (1000, 250), (1200, 300), (2, 1)):
        data = scenario(quarter, name="x", dataset="gsm8k", num_drafts=drafts, rtt_ms=10.0)
        assert sum(p["count"] for p in data["auto_topology"]["devices"]) == scaled
        assert [s["count"] for s in data["auto_topology"]["servers"]] == [2, 2, 1]
    quick = plan_scenarios(DsdPlan.quick())["routing-jsq-1200"]["auto_topology"]
    assert sum(p["count"] for p in quick["devices"]) == 300
    assert sum(s["count"] for s in quick["servers"]) == 5


def test_workload_is_closed_loop_with_lognormal_think_time() -> None:
    setup = replace(DsdSetup(), jitter_share=0.2)
    data = scenario(setup, name="x", dataset="cnndm", num_drafts=600, rtt_ms=30.0)
    assert data["links"]["default"] == {
        "rtt_ms": 30.0, "jitter_ms": pytest.approx(6.0), "bandwidth_mbps": 100.0
    }  # fmt: skip
    assert data["workload"] == {
        "kind": "closed_loop",
        "dataset": "sharegpt",  # no CNN/DailyMail length table
        "think_time_s": pytest.approx(17.42013895, abs=1e-8),  # Little's law over C1 GSM8K
        "think_distribution": "lognormal",
        "think_cv": 0.6,
        "think_min_s": 0.22,
        "ramp_s": pytest.approx(17.42013895, abs=1e-8),
    }
    assert data["acceptance"] == {"kind": "trace", "traces": ["cnndm"]}
    assert data["duration_s"] == 120.0 and data["seed"] == 4
    assert data["policies"] == {
        "routing": {"name": "jsq"},
        "batching": {"name": "lab", "params": {"max_length_ratio": 1.5}},
        "window": {"name": "static", "params": {"gamma": 4}},
    }
    awc = scenario(setup, name="x", dataset="gsm8k", num_drafts=600, rtt_ms=30.0,
                   stack=STACKS["s4"])  # fmt: skip
    assert awc["policies"]["window"] == {"name": "awc", "params": {"queue_capacity": 12}}
    assert awc["workload"]["dataset"] == "gsm8k"


@pytest.mark.parametrize("rounds", CROSSOVER_MODES)
def test_compat_scenario_adds_dsdsims_simplifications_and_the_drain(rounds: RoundMode) -> None:
    """A compat run is its physical run plus DSD-Sim's simplifications, round records for
    its TPOT, and arrivals stopped at the horizon with as long again to drain."""
    setup = replace(DsdSetup(), duration_s=40.0)
    physical, compat = (
        scenario(replace(setup, cost_mode=mode), name="x", dataset="gsm8k", num_drafts=600,
                 rtt_ms=60.0, rounds=rounds)
        for mode in COST_MODES
    )  # fmt: skip
    mode = "distributed" if rounds == "distributed" else "fused"
    assert physical["mode"] == compat["mode"] == mode
    assert physical["fused_rounds"] == ("colocated" if rounds == "colocated" else "cloud_only")
    for key in ("dsdsim_compat", "cloud_only_draft_pass", "record_rounds"):
        assert key not in physical
    assert "arrivals_until_s" not in physical["workload"] and physical["duration_s"] == 40.0
    assert compat["dsdsim_compat"] == {
        "one_pass_drafting": True, "fixed_rounds": True, "unqueued_fused": True
    }  # fmt: skip
    # the wasted draft pass goes with cloud-only rounds (a distributed run's fused decisions)
    assert compat["cloud_only_draft_pass"] is (rounds != "colocated")
    assert compat["record_rounds"] is True
    assert compat["workload"]["arrivals_until_s"] == 40.0  # the horizon
    assert compat["duration_s"] == 80.0  # and the drain
    # nothing else differs
    rest = {k: v for k, v in compat.items() if k not in {"dsdsim_compat", "cloud_only_draft_pass",
                                                         "record_rounds"}}  # fmt: skip
    rest["duration_s"] = physical["duration_s"]
    rest["workload"] = {k: v for k, v in compat["workload"].items() if k != "arrivals_until_s"}
    assert rest == physical


def test_scenario_dicts_are_valid_in_both_modes() -> None:
    from edgespec.sim.setup.scenario import scenario_from_dict

    for mode in COST_MODES:
        setup = replace(DsdSetup(), cost_mode=mode, fleet_share=0.25)
        for rounds in CROSSOVER_MODES:
            data = scenario(setup, name="x", dataset="humaneval", num_drafts=600, rtt_ms=10.0,
                            stack=STACKS["s4"], rounds=rounds)  # fmt: skip
            built = scenario_from_dict(data)
            assert (built.dsdsim_compat is not None) is (mode == "dsdsim_compat")
            assert built.record_rounds is (mode == "dsdsim_compat")
            assert built.workload.think_distribution == "lognormal"
