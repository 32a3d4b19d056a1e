"""``edgespec reproduce zhu --quick``: what the reduced run reproduces, and its report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.zhu.bandwidth import BY_CONSTRUCTION_SPLIT
from edgespec.reproduce.zhu.causes import (
    ADS_SHORT,
    BY_CONSTRUCTION_BAND,
    BY_CONSTRUCTION_GAP,
    BY_CONSTRUCTION_HIGHEST,
    findings,
)
from edgespec.reproduce.zhu.claims import points_row
from edgespec.reproduce.zhu.coverage import coverage, left_out
from edgespec.reproduce.zhu.latencies import ads_upload_s
from edgespec.reproduce.zhu.report import reproduce as reproduce_zhu
from edgespec.reproduce.zhu.runs import (
    DrawJob,
    Users,
    ZhuPlan,
    sweep_key,
    upload_s,
)
from edgespec.reproduce.zhu.setup import G0_READINGS_DB, ZhuSetup
from edgespec.reproduce.zhu.stats import reduction
from tests.reproduce.reports import check_declared_files, check_left_out_last, check_quick_report


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ClaimRow]]:
    out = tmp_path_factory.mktemp("reproduce-zhu")
    rows = reproduce_zhu(out, quick=True, workers=1, progress=False, command="test")
    return out, rows


def test_report_lists_every_claim_and_the_dp_gap(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, rows = quick
    report = check_quick_report(out, rows, expect_miss=False)
    check_declared_files(out, "zhu")
    assert [r.claim_id for r in rows].count("Z1") == 6
    assert {r.claim_id for r in rows} == {"Z1", "Z2", "Z3", "Z4", "Z5"}
    for row in rows:
        assert f"| {row.claim_id} | {row.what} |" in report
    assert "**path loss constant g0 = −60 dB**" in report
    assert "## Algorithm 1 against exhaustive search" in report
    # the findings rest on the run's gains, which a quick run does not compare: named as left
    # to the full run (Finding.from_run), as every paper's are, not stated
    assert "lie within ±25% of Fig. 9's at" not in report
    assert "all three within ±25% of Fig. 9 at" not in report and "- **Z3" not in report
    assert (
        "## Findings\n\nA quick run's numbers are not compared with the paper's, so no finding "
        "here rests on them; left to the full run, which states them from its own: **Z3 (Fig. "
        "8)**, resting on the DP batching's median gains at K = 90, I_max = 1792 and O_max = "
        "1024; **Z4 (Fig. 9)**, resting on the optimal split's median gains at each g0 "
        "reading; **Z3 (Fig. 8a, small K)**, resting on the per-draw latencies of Heuristic "
        "batching and the DP over K.\n\n## Where the paper is wrong"
    ) in report
    found = "\n".join(f.markdown() for f in findings(ZhuSetup(), json.loads(
        (out / "results.json").read_text())["draws"]))  # fmt: skip
    assert "- **Z3 (Fig. 8)** (the paper is inconsistent with itself): " in found
    assert (
        "- **Z4 (Fig. 9)** (an input the paper does not give): g0 is printed as “−30 dBm”, a "
        "power unit on a dimensionless gain (SEED-NOTES §2.5, 4), so the value the paper ran "
        "is not given; the optimal split's gain at 25 MHz grows with how it is read, from -30 "
        "dB to -60 dB: "
    ) in found
    assert "Each pair's gain is judged at the chosen -60 dB (the printed unit converted" in found
    assert "cannot be checked" not in found
    assert "from -30 dB to -60 dB: (LLaMA-68M, LLaMA-7B) " in found
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
    # Every direction judged of Z1-Z5 holds on the literal model; Fig. 7's strict ordering
    # at K = 10, where the pipeline ties SD w/o pipeline by the formula (one batch, nothing
    # to overlap), is shown by construction, not judged.
    assert [(r.what, r.outcome) for r in rows if r.direction_ok is False] == [
        ("Fig. 7: proposed < SD w/o pipeline where the DP's plan is one batch",
         Outcome.BY_CONSTRUCTION)
    ]  # fmt: skip
    assert Outcome.MISS not in {r.outcome for r in rows}
    # The pipeline saves about 30 % against SD without it (paper 31.3 %), inside ±25 %.
    # Fig. 7a's K = 100 and Fig. 7b's I_max = 512 are one point: one row, both judged.
    fig7ab = [r for r in rows if r.claim_id == "Z2" and r.what.startswith(("Fig. 7a", "Fig. 7b"))]
    assert [r.what.split(":")[0] for r in fig7ab] == ["Fig. 7a / 7b"]
    assert fig7ab[0].paper == "+31.3% / +31.6%" and fig7ab[0].tolerance == "±25 % of each"
    assert fig7ab[0].magnitude_ok and fig7ab[0].ours.startswith("+30.")
    # The pipeline below ADS: ADS's batch limit (chosen: the MBS memory's) decides it, ADS
    # in one batch of 100 being faster; a setting, not a hold. So does Static's size Static
    # batching worst, and ADS's limit Fig. 8's proposed below ADS at every point run.
    for row in rows[:3]:
        assert row.outcome is Outcome.SETTING and row.direction_ok is True
        assert row.setting.startswith("ADS's batch limit, an input the paper does not give")
        assert row.note.startswith("ADS above the axis (") and row.quick_run == ""
    settings = [r.what for r in rows if r.outcome is Outcome.SETTING][3:]
    assert settings == [
        "Fig. 8a: Static batching worst at the largest K",
        "Fig. 8: proposed below ADS, where ADS's batch limit decides it",
    ]
    # Z3's gap is the paper's own printed constants: the cause says so, with the arithmetic.
    z3 = [r for r in rows if r.claim_id == "Z3" and r.magnitude_ok is not None]
    assert len(z3) == 3
    for row in z3:
        assert row.reason is not None and row.reason.cause is Cause.INCONSISTENT
        assert "c^d_1 is 19.8× c^v_1" in row.reason.line
    # Z4: the per-pair gain's sign holds by construction (not judged, said in the note); its
    # magnitude is judged at the chosen g0 reading, on one draw not comparable; the
    # ordering is judged at every reading.
    z4 = [r for r in rows if r.claim_id == "Z4"]
    assert len(z4) == 4
    assert [r.outcome for r in z4] == [Outcome.QUICK] * 3 + [Outcome.HOLDS]
    for row in z4[:3]:
        assert (row.direction_ok, row.by_construction, row.setting) == (None, "", "")
        assert row.magnitude_ok is not None and row.cause is Cause.QUICK_RUN
        assert row.quick_run == "1 Monte-Carlo draw(s) instead of 20"
        assert row.tolerance == "±25 % at the chosen g0 (-60 dB)"
        assert row.note.startswith(f"direction not judged: {BY_CONSTRUCTION_SPLIT}; ")
    # Z5: latency falling with B_w is the upload's, by construction; the rise with K is
    # judged on its direction, the R² shown beside it (the paper gives no number).
    z5 = [r for r in rows if r.claim_id == "Z5"]
    assert [r.outcome for r in z5] == [Outcome.HOLDS, Outcome.BY_CONSTRUCTION]
    assert z5[1].by_construction == BY_CONSTRUCTION_BAND and not z5[1].setting
    assert (z5[0].direction_ok, z5[0].magnitude_ok) == (True, None)
    assert z5[0].ours.startswith("rises at every K run (10, 50, 90, 100); R² = ")
    assert "R² shown, not judged" in z5[0].tolerance and "≥ 0.98" not in z5[0].tolerance
    for row in z4[:3]:
        assert row.note.endswith(
            "% (1 draw, no spread)"
        ) and "; at the other g0 readings (shown, not judged): " in (row.note)
        readings = row.note.split("(shown, not judged): ")[1].split("; ")
        assert [part.split(":")[0] for part in readings] == ["-30 dB", "-40 dB", "-50 dB"]
    assert z4[3].direction_ok and z4[3].ours == "ordered at -30 dB, -40 dB, -50 dB, -60 dB"
    # its note asserted "all three within ±25% of Fig. 9 at -60 dB" from one draw
    assert z4[3].note == ("whether the gains lie within ±25% of Fig. 9's: not compared (quick run)")


def test_draws_share_random_numbers_and_are_seeded() -> None:
    setup = replace(ZhuSetup(), num_users=30)
    plan = ZhuPlan(1, (0.5, 0.9), (10, 30), (512,), (2048,), (25.0,), 0, 5)
    first = DrawJob(setup, plan, 0)()
    assert DrawJob(setup, plan, 0)() == first
    other = DrawJob(setup, plan, 1)()
    assert other != first
    # ADS does not draft: α leaves it alone; the pipeline gets faster as α grows.
    assert first["fig6/1.1b-7b/alpha=0.5/ads"] == first["fig6/1.1b-7b/alpha=0.9/ads"]
    # ... and uploads only the verify model's embeddings (16·h^v_1 bits a token).
    costs = setup.costs("1.1b-7b")
    obs = Users.draw(setup, 0).observe(setup, 30, 512, 2048, 25.0)
    both = upload_s(costs, obs, "optimal")
    assert ads_upload_s(costs, obs) == pytest.approx(
        both * costs.verify.hidden / (costs.draft.hidden + costs.verify.hidden)
    )
    assert first["fig6/1.1b-7b/alpha=0.9/proposed"] < first["fig6/1.1b-7b/alpha=0.5/proposed"]
    k30 = sweep_key("K", 30, setup)
    assert k30 == "K=30" == sweep_key("I_max", 512, setup) == sweep_key("O_max", 2048, setup)
    value, lo, hi, _ = reduction(
        [first, other], f"sweep/{k30}/no_pipeline", f"sweep/{k30}/proposed"
    )
    assert lo <= value <= hi and value > 0


def test_g0_readings_scale_the_gains_and_the_gain_grows_with_path_loss() -> None:
    setup = replace(ZhuSetup(), num_users=20)
    plan = ZhuPlan(1, (0.8,), (20,), (512,), (2048,), (25.0,), 0, 5)
    users = Users.draw(setup, 0)
    louder = users.read_g0(setup, -30.0)
    assert louder.gains == pytest.approx([g * 1e3 for g in users.gains])
    assert users.read_g0(setup, setup.path_loss_db) == users
    result = DrawJob(setup, plan, 0)()
    got = [
        reduction([result], f"g0/68m-7b/db={db:g}/uniform", f"g0/68m-7b/db={db:g}/optimal")[0]
        for db in G0_READINGS_DB
    ]
    # The worse the channel, the more the bandwidth split matters.
    assert got == sorted(got) and got[0] > 0
    # The chosen reading's point is Fig. 9's at 25 MHz.
    for rule in ("optimal", "uniform"):
        assert result[f"g0/68m-7b/db=-60/{rule}"] == result[f"fig9/68m-7b/band=25.0/{rule}"]


def test_z1_rows_that_cannot_fail_hold_by_construction(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, rows = quick
    # ADS reads no α: the gap to it grows exactly as the pipeline (Eqs. 7-8) gets faster;
    # the (1.1B, 13B) pair has the larger models at the same per-FLOP costs: both decided by
    # the model's construction, shown and not judged, counted apart from the rows that hold.
    draw = json.loads((out / "results.json").read_text())["draws"][0]
    for pair in ("68m-7b", "1.1b-7b", "1.1b-13b"):
        assert draw[f"fig6/{pair}/alpha=0.5/ads"] == draw[f"fig6/{pair}/alpha=0.9/ads"]
    inside, gap, highest = [r for r in rows if r.what.startswith("Fig. 6: ")]
    assert inside.what == "Fig. 6: SD pipeline against the axes (every pair, every α)"
    assert inside.outcome is Outcome.NOT_JUDGED  # no numbers in the figure: for scale
    assert gap.what == "Fig. 6: the gap to ADS grows with α"
    assert (gap.outcome, gap.by_construction) == (Outcome.BY_CONSTRUCTION, BY_CONSTRUCTION_GAP)
    assert highest.what == "Fig. 6: (LLaMA-1.1B, LLaMA-13B) highest"
    assert (highest.outcome, highest.by_construction) == (
        Outcome.BY_CONSTRUCTION,
        BY_CONSTRUCTION_HIGHEST,
    )
    assert gap.cause is None and gap.why == "" and gap.verdict.startswith("by construction: ")
    assert "4 by construction, not judged" in (out / "REPORT.md").read_text()


def test_quick_run_says_which_points_it_leaves_out(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, rows = quick
    # the full run's two misses are at O_max = 256, which the quick run does not have: its
    # "every point" rows say they hold at the points run, and name the others
    every = [r for r in rows if r.what.endswith("at every point")]
    assert [r.claim_id for r in every] == ["Z2"]  # Z3's below ADS: a setting at every point
    # Z2's strict "<" holds at the points run but K = 10, a tie by construction (its own test)
    assert [(r.ours, r.outcome) for r in every] == [("at the 7 points run", Outcome.HOLDS)]
    assert every[0].tolerance == (
        "direction, at the points run only (not run: K = 20, 30, 40, 60, 70, 80; "
        "I_max = 128, 256, 768, 1024, 1280, 1536; O_max = 256, 512, 768, 1280, 1536); not at "
        "K=10: by construction, the next row"
    )
    for row in rows[:4]:
        assert row.tolerance.endswith("; direction at α = 0.5, 0.9 (quick run)")
    report = (out / "REPORT.md").read_text()
    check_left_out_last(report, left_out(ZhuSetup(), ZhuPlan.quick()))
    assert (
        "\n- Z1 at α = 0.6, 0.7 and 0.8 (Fig. 6; its rows at every α judged without them): not "
        "run, only α = 0.5 and 0.9\n- Z2, Z3, Z5 at K = 20, 30, 40, 60, 70, 80; I_max = 128, "
        "256, 768, 1024, 1280, 1536; O_max = 256, 512, 768, 1280, 1536 (Figs. 7–8; the rows at "
        "every point judged without them): not run, only K = 10, 50, 90, 100; I_max = 1792; "
        "O_max = 1024, 1792\n- Z5 at B = 20, 30 and 35 MHz (Fig. 9): not run, only 15, 25 and "
        "40 MHz\n- every claim (Z1–Z5): 1 Monte-Carlo draw (full: 20)\n"
    ) in report


def test_full_plan_leaves_nothing_out_and_claims_every_point() -> None:
    setup = ZhuSetup()
    full = coverage(setup, ZhuPlan.full())
    assert left_out(setup, ZhuPlan.full()) == []
    assert not (full.alphas_left_out or full.points_left_out or full.bands_left_out_mhz)
    assert len(full.points) == 24 and "O_max=256" in full.points
    row = points_row("Z3", "every point", ["O_max=256"], ADS_SHORT, full)
    assert (row.ours, row.tolerance, row.direction_ok) == ("not at O_max=256", "direction", False)
    row = points_row("Z3", "every point", [], ADS_SHORT, full)
    assert (row.ours, row.outcome) == ("at every point", Outcome.HOLDS)
    quick = coverage(setup, ZhuPlan.quick())
    assert quick.points_left_out[-5:] == tuple(f"O_max={o}" for o in (256, 512, 768, 1280, 1536))
