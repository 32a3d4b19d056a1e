"""``edgespec reproduce zhu --quick``: what the reduced run reproduces, and its report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from edgespec.reproduce.claims import ClaimRow, Outcome
from edgespec.reproduce.zhu.claims import reduction
from edgespec.reproduce.zhu.report import reproduce as reproduce_zhu
from edgespec.reproduce.zhu.runs import DrawJob, ZhuPlan, sweep_key
from edgespec.reproduce.zhu.setup import ZhuSetup
from tests.reproduce.reports import check_quick_report


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ClaimRow]]:
    out = tmp_path_factory.mktemp("reproduce-zhu")
    rows = reproduce_zhu(out, quick=True, workers=1, progress=False, command="test")
    return out, rows


def test_report_lists_every_claim_and_the_dp_gap(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, rows = quick
    report = check_quick_report(out, rows, expect_miss=False)
    assert [r.claim_id for r in rows].count("Z1") == 5
    assert {r.claim_id for r in rows} == {"Z1", "Z2", "Z3", "Z4", "Z5"}
    for row in rows:
        assert f"| {row.claim_id} | {row.what} |" in report
    assert "**path loss constant g0 = −60 dB**" in report
    assert "## Algorithm 1 against exhaustive search" in report
    assert "| expected, Eq. 7 (the paper) |" in report and "| +0.00% |" in report
    results = json.loads((out / "results.json").read_text())
    assert len(results["draws"]) == ZhuPlan.quick().draws
    assert [len(g) for g in results["dp_gaps"].values()] == [ZhuPlan.quick().exhaustive_draws] * 2
    # The plan run as events with the paper's expected acceptance is the analytic latency.
    (events,) = results["events"]
    assert events["expected"] == pytest.approx(events["analytic"], rel=1e-9)
    assert events["trace"] != events["expected"]


def test_what_the_quick_run_reproduces(quick: tuple[Path, list[ClaimRow]]) -> None:
    _, rows = quick
    # Every direction of Z1-Z5 holds on the literal model.
    assert all(r.direction_ok is not False for r in rows)
    # The pipeline saves about 30 % against SD without it (paper 31.3 %), inside ±25 %.
    fig7a = next(r for r in rows if r.what.startswith("Fig. 7a: vs SD"))
    assert fig7a.magnitude_ok and fig7a.ours.startswith("+30.")
    # ADS beyond Fig. 6's axes: a miss of magnitude with its stated cause.
    for row in rows[:3]:
        assert row.outcome is Outcome.DIRECTION_ONLY and row.reason is not None


def test_draws_share_random_numbers_and_are_seeded() -> None:
    setup = replace(ZhuSetup(), num_users=30)
    plan = ZhuPlan(1, (0.5, 0.9), (10, 30), (512,), (2048,), (25.0,), 0, 5)
    first = DrawJob(setup, plan, 0)()
    assert DrawJob(setup, plan, 0)() == first
    other = DrawJob(setup, plan, 1)()
    assert other != first
    # ADS does not draft: α leaves it alone; the pipeline gets faster as α grows.
    assert first["fig6/1.1b-7b/alpha=0.5/ads"] == first["fig6/1.1b-7b/alpha=0.9/ads"]
    assert first["fig6/1.1b-7b/alpha=0.9/proposed"] < first["fig6/1.1b-7b/alpha=0.5/proposed"]
    k30 = sweep_key("K", 30, setup)
    assert k30 == "K=30" == sweep_key("I_max", 512, setup) == sweep_key("O_max", 2048, setup)
    value, lo, hi, _ = reduction(
        [first, other], f"sweep/{k30}/no_pipeline", f"sweep/{k30}/proposed"
    )
    assert lo <= value <= hi and value > 0
