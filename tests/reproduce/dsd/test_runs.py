"""``edgespec reproduce dsd --quick`` end to end (CI), in both cost modes: the run folder,
the scenario files it ran, the run summaries, the shapes the reduced physical run must show
(Fig. 6: a cloud-only round only pays the downlink, so its TPOT is nearly flat in the RTT,
while every distributed round pays the round trip; more drafts, more throughput), and a
report that says it is a quick run and gives every row that does not hold its cause."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.reproduce.claims import UNJUDGED, Cause, ClaimRow, Outcome
from edgespec.reproduce.dsd.causes import (
    CAUSES,
    MODE_TAGS,
    POLICIES,
    UNSATURATED,
    table_throughput_reason,
)
from edgespec.reproduce.dsd.choices import CHOICES, SENSITIVITIES
from edgespec.reproduce.dsd.claims import CALIBRATION, all_rows
from edgespec.reproduce.dsd.modes import split_modes
from edgespec.reproduce.dsd.paper import PAPER_TABLE2
from edgespec.reproduce.dsd.quick import left_out
from edgespec.reproduce.dsd.report import reproduce as reproduce_dsd
from edgespec.reproduce.dsd.runs import DsdPlan, crossover_name, plan_scenarios, results_from_dict
from edgespec.reproduce.dsd.setup import COST_MODES, CostMode
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.reproduce.reports import check_declared_files, check_left_out_last, check_quick_report

QUICK = DsdPlan.quick()
FIGURES = ("fig5_stacks", "fig6_crossover", "fig7_8_routing", "fig9_10_batching")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ClaimRow]]:
    out = tmp_path_factory.mktemp("reproduce-dsd")
    rows = reproduce_dsd(out, quick=True, workers=1, progress=False, command="test")
    return out, rows


def _results(out: Path) -> dict[str, Any]:
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    return results


def _mode(row: ClaimRow) -> CostMode:
    (mode,) = [m for m in COST_MODES if row.what.startswith(f"[{MODE_TAGS[m]}] ")]
    return mode


def test_report_and_files_per_mode(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, rows = quick
    report = (out / "REPORT.md").read_text()
    ids = {"D2", "D3", "D4", "D5", "D6", "D7"}
    assert {r.claim_id for r in rows} == {"D1", *ids}
    assert rows[0] == CALIBRATION  # D1 once, for both modes: shown, not judged
    assert f"| D1 | {CALIBRATION.what} |" in report and "| not judged |" in report
    for claim in ids:  # every claim in both modes, the same rows in each
        by_mode = {
            m: [r for r in rows if r.claim_id == claim and _mode(r) == m] for m in COST_MODES
        }
        assert by_mode["physical"] and len(by_mode["physical"]) == len(by_mode["dsdsim_compat"])
        assert [r.what.split("] ", 1)[1] for r in by_mode["physical"]] == [
            r.what.split("] ", 1)[1] for r in by_mode["dsdsim_compat"]
        ]
    # the headline's rows (D1 and the physical ones), then the named compat mode's, each by claim
    split = len(rows) // 2 + 1
    assert {_mode(r) for r in rows[1:split]} == {"physical"}
    assert {_mode(r) for r in rows[split:]} == {"dsdsim_compat"}
    for part in (rows[:split], rows[split:]):
        assert [r.claim_id for r in part] == sorted(r.claim_id for r in part)
    for row in rows:
        assert f"| {row.claim_id} | {row.what} |" in report
    for name, why in CHOICES:
        assert f"- **{name}**: {why}" in report
    # the variant fleet is a sensitivity, listed after the files, not among the chosen inputs;
    # what the quick run leaves out closes the report
    chosen, files = report.index("## Inputs the paper does not state"), report.index("## Files")
    ((name, what),) = SENSITIVITIES
    assert (
        "\n\n## Sensitivities\n\nShown, never judged and never used to choose an input.\n\n"
        f"- **{name}**: {what}\n\n## What the quick run leaves out\n\n"
    ) in report
    assert "TP-1" not in report[chosen:files]
    for mode in COST_MODES:
        for figure in FIGURES:
            assert (out / f"{mode}-{figure}.png").read_bytes()[:4] == b"\x89PNG"
            assert f"- `{mode}-{figure}.png`" in report
    assert "- `results.json`" in report
    assert "## Findings" in report
    # the findings on the paper's printed numbers are stated; those on the run's numbers,
    # which a quick run does not compare with the paper's, are left to the full run
    for claims in ("D2, D4 absolute rows", "D4 Table 2 absolute rows", "D4 Table 2 C1 → C3"):
        assert f"- **{claims}** (" in report
    assert "- **D3** (" not in report and "- **D4, D5 (DSD-Sim compat)** (" not in report
    assert (
        "left to the full run, which states them from its own: **D3**, resting on the "
        "crossover RTT on each fleet; **D4, D5 (DSD-Sim compat)**, resting on the WC-DNN's "
        "mean throughput gain over Static in each cost mode.\n"
    ) in report


def test_scenario_files_per_mode_are_the_runs(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, _ = quick
    names = plan_scenarios(QUICK)
    # D3 twice (4-GPU and the TP-1 variant); D7: FIFO, LAB and LAB under 4 other bounds
    assert len(names) == 5 + 3 * 3 + 2 * 2 + 3 + 2 * 4 + 2 * 4
    files = {p.name for p in (out / "scenarios").glob("*.yaml")}
    assert files == {f"{m}-{n}.yaml" for m in COST_MODES for n in names}
    for mode in COST_MODES:
        planned = plan_scenarios(QUICK.in_mode(mode))
        for name, data in planned.items():
            written = yaml.safe_load((out / "scenarios" / f"{mode}-{name}.yaml").read_text())
            assert written == data
            built = scenario_from_dict(written)  # each is a valid scenario
            assert (built.dsdsim_compat is not None) is (mode == "dsdsim_compat")
            assert built.record_rounds is (mode == "dsdsim_compat")
            assert built.workload.kind == "closed_loop"
            assert sum(p.count for p in built.auto_topology.servers) == 5


def test_results_are_keyed_by_mode(quick: tuple[Path, list[ClaimRow]]) -> None:
    results = _results(quick[0])
    assert list(results) == ["reproduction", *COST_MODES]  # which run wrote it, then
    for mode in COST_MODES:
        setup = QUICK.in_mode(mode).setup
        assert results[mode]["setup"] == setup.to_dict()
        runs = results[mode]["runs"]
        assert set(runs) == set(plan_scenarios(QUICK))
        for name, r in runs.items():
            assert r["num_requests"] > 0, name
            # throughput over the horizon (compat: the drain's completions included)
            assert r["throughput_requests_per_s"] == pytest.approx(
                r["num_requests"] / setup.duration_s
            )
            assert r["tpot_ms"] > 0 and r["request_tpot_ms"] > 0
            if mode == "physical":
                assert r["tpot_ms"] == r["request_tpot_ms"]
        if mode == "dsdsim_compat":  # DSD-Sim's TPOT, from the round records
            dist = runs[crossover_name("distributed", 10.0)]
            assert dist["tpot_ms"] != dist["request_tpot_ms"]


def test_physical_cloud_only_is_flat_in_the_rtt_and_distributed_degrades(
    quick: tuple[Path, list[ClaimRow]],
) -> None:
    runs = _results(quick[0])["physical"]["runs"]
    rtts = sorted(QUICK.crossover_rtts_ms)
    assert rtts == [10.0, 60.0, 120.0]
    cloud = [runs[crossover_name("cloud_only", r)]["tpot_ms"] for r in rtts]
    dist = [runs[crossover_name("distributed", r)]["tpot_ms"] for r in rtts]
    # only the downlink crosses the network (pipelined with the next round): the quick run
    # gives 61.2 / 64.2 / 61.2 ms on the 4-GPU servers
    assert max(cloud) <= 1.1 * min(cloud)
    # every distributed round pays the round trip (the quick run: 50.8 / 67.8 / 88.7 ms)
    assert dist[0] < dist[1] < dist[2]
    assert dist[2] - dist[0] >= 0.1 * dist[0]
    light, heavy = runs["routing-jsq-400"], runs["routing-jsq-1200"]
    assert heavy["throughput_requests_per_s"] > 1.3 * light["throughput_requests_per_s"]
    light, heavy = runs["batching-fcfs-400"], runs["batching-fcfs-1200"]
    assert heavy["throughput_requests_per_s"] > light["throughput_requests_per_s"]


def test_report_says_quick_and_gives_every_miss_its_cause(
    quick: tuple[Path, list[ClaimRow]],
) -> None:
    out, rows = quick
    # every row not comparable; the headline counts the physical rows (and D1) only, the
    # named compat mode's rows give their causes in their own section
    paper, named = rows[: len(rows) // 2 + 1], rows[len(rows) // 2 + 1 :]
    report = check_quick_report(out, paper, expect_miss=False)
    for row in named:
        if row.outcome not in (Outcome.HOLDS, Outcome.NOT_JUDGED, *UNJUDGED):
            assert row.cause is not None and f"| {row.outcome.value} | {row.why} |" in report
    check_declared_files(out, "dsd")
    check_left_out_last(report, left_out(QUICK))
    assert "\n- D4, D5 (Table 2) in C2, C3 and C4: not run, only C1\n" in report
    cells = [table_throughput_reason(d, c) for d, c in PAPER_TABLE2]
    policies = [why for _, why in POLICIES.values()]
    variant = [r for r in rows if r.what.endswith("DSD-Sim's TP-1 targets, the variant)")]
    for row in variant:  # the sensitivity: never judged, no cause, not even not comparable
        assert (row.outcome, row.reason, row.quick_run) == (Outcome.NOT_JUDGED, None, "")
        assert "it would give direction –, magnitude – (quick run); TPOT ms" in row.note
    assert "✓" not in report and "✗" not in report  # no verdict, would-be ones included
    assert "in this run, from our Default" not in report  # no bound from a quick Default
    for row in rows[1:]:  # every row states one of its mode's causes, or the policies'
        if row in variant:
            continue
        stated = CAUSES[_mode(row)]
        reason = row.reason
        known = [getattr(stated, f.name) for f in fields(stated)]
        known += [UNSATURATED, *cells]
        assert reason is not None
        if "catches up" in row.what:  # its line says how this run's gaps moved
            assert reason.cause is Cause.MISSING_INPUT and "the same share" in reason.line
            continue
        assert reason in known or (
            reason.cause is Cause.MISSING_INPUT and any(why in reason.line for why in policies)
        ), reason
    # 40 s runs end inside the start-up transient (70 s): no row is judged, every row is
    # not comparable, its numbers shown; the fitted cell's throughput (the think time's
    # fit) is a setting in every run, one per cost mode
    assert not QUICK.past_transient and DsdPlan.full().past_transient
    settings = [r for r in rows if r.setting]
    assert [(r.claim_id, r.what.split("] ")[1]) for r in settings] == [
        ("D4", "Table 2 C1 gsm8k thr (Static / Dynamic / AWC)")
    ] * 2
    assert all(r.outcome is Outcome.SETTING for r in settings)
    for row in rows[1:]:
        if row.setting or row in variant:
            continue
        assert (row.outcome, row.cause, row.direction_ok) == (
            Outcome.QUICK, Cause.QUICK_RUN, None,
        ), row  # fmt: skip
        assert "end inside the start-up transient (70 s" in row.why
        assert f"| {row.verdict} | not comparable (quick run) |" in report


def test_rows_rebuild_from_results_json(quick: tuple[Path, list[ClaimRow]]) -> None:
    """A run folder's results.json gives back the same rows without running anything (how
    docs/REPRODUCE.md recomputes the full run's headline); another plan's is refused."""
    out, rows = quick
    data = _results(out)
    rebuilt = {res.cost_mode: all_rows(res) for res in results_from_dict(data, QUICK)}
    split = split_modes(CALIBRATION, rebuilt)
    assert [*split.paper, *split.named] == rows
    with pytest.raises(ValueError) as refused:
        results_from_dict(data, DsdPlan.full())
    assert str(refused.value) == (
        "results for physical: setup duration_s is 40.0, the plan's is 120.0: these results "
        "are not this plan's"
    )
    with pytest.raises(ValueError) as unknown:
        results_from_dict({"fused": data["physical"]}, QUICK)
    assert str(unknown.value) == ("results for 'fused': not a cost mode (physical, dsdsim_compat)")
