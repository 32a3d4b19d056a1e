"""``edgespec reproduce dsd --quick`` end to end (CI): the run folder, the scenario files it
ran, and the shapes the reduced run must show (Fig. 6: fused mode is flat in the RTT while
distributed mode degrades; more drafts, more load), and a report that says it is a quick run
and gives every row that does not hold its cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.dsd.report import reproduce as reproduce_dsd
from edgespec.reproduce.dsd.runs import DsdPlan, plan_scenarios
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.reproduce.reports import check_quick_report


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ClaimRow]]:
    out = tmp_path_factory.mktemp("reproduce-dsd")
    rows = reproduce_dsd(out, quick=True, workers=1, progress=False, command="test")
    return out, rows


def test_report_and_files(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, rows = quick
    report = (out / "REPORT.md").read_text()
    assert {r.claim_id for r in rows} == {"D2", "D3", "D4", "D5", "D6", "D7"}
    for row in rows:
        assert f"| {row.claim_id} | {row.what} |" in report
    assert "**arrival rate**: Poisson, 0.043 requests/s per draft" in report
    for name in ("fig5_stacks", "fig6_crossover", "fig7_8_routing", "fig9_10_batching"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    scenarios = sorted((out / "scenarios").glob("*.yaml"))
    assert len(scenarios) == len(plan_scenarios(DsdPlan.quick())) == 5 + 6 + 3 + 8
    for path in scenarios:
        scenario_from_dict(yaml.safe_load(path.read_text()))  # each is a valid scenario
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert all(r["num_requests"] > 0 for r in runs.values())


def test_fused_is_flat_in_the_rtt_and_distributed_degrades(
    quick: tuple[Path, list[ClaimRow]],
) -> None:
    runs = json.loads((quick[0] / "results.json").read_text())["runs"]
    fused = [runs[f"crossover-fused-rtt{r}"]["tpot_ms"] for r in (10, 60, 120)]
    dist = [runs[f"crossover-distributed-rtt{r}"]["tpot_ms"] for r in (10, 60, 120)]
    assert max(fused) <= 1.1 * min(fused)  # only the first and last tokens cross the network
    assert dist[0] < dist[1] < dist[2]  # every distributed round pays the round trip
    light, heavy = runs["routing-jsq-400"], runs["routing-jsq-1200"]
    assert heavy["throughput_requests_per_s"] > light["throughput_requests_per_s"]


def test_report_says_quick_and_gives_every_miss_its_cause(
    quick: tuple[Path, list[ClaimRow]],
) -> None:
    out, rows = quick
    report = check_quick_report(out, rows)
    # 12 s runs: the absolute throughput (9 req/s against 25.1) is not compared
    absolute = next(r for r in rows if r.what.startswith("default: throughput"))
    assert absolute.outcome is Outcome.QUICK and absolute.cause is Cause.QUICK_RUN
    assert "direction –, magnitude ✗ (quick run) | not comparable (quick run) |" in report
    assert all(r.quick_run for r in rows if r.magnitude_ok is not None and r.claim_id != "D3")
