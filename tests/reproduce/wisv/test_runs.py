"""``edgespec reproduce wisv --quick``: what the reduced run reproduces, and its report.

The decision head's tables (``edgespec train wisv``) are stand-ins here, written to a
temporary folder: WISV's CSI-aware head (``kappa-critical``), at the shares Table I's WISV
AAL implies under α = 0.9 (≈0.58 rejected on the 20 Mbit/s link, ≈0.65 on the 500 Mbit/s
one), and Fig. 5's head without relabelling, which rejects more on the poor link.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import edgespec.sim.model.reject_table as semantic
from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.wisv.calibrated import calibrated_shares
from edgespec.reproduce.wisv.claims import per_round_extra_s
from edgespec.reproduce.wisv.heads import fig5_rows
from edgespec.reproduce.wisv.report import reproduce as reproduce_wisv
from edgespec.reproduce.wisv.runs import WisvPlan, WisvResults, left_out
from edgespec.reproduce.wisv.setup import GAMMAS, METHODS, RATES_MBPS, RTTS_MS, WisvSetup
from tests.reproduce.reports import check_declared_files, check_left_out_last, check_quick_report


def _curve(at_12: float) -> list[float]:
    """1 at T = 0 (greedy SD), ``at_12`` at T = 12, 0 at T = 16, linear between."""
    return [1 - (1 - at_12) * t / 12 if t <= 12 else at_12 * (16 - t) / 4 for t in range(17)]


def write_tables(folder: Path, *, ablation: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    channels = {
        "poor": {"uplink_mbps": 20, "rtt_ms": 50},
        "good": {"uplink_mbps": 500, "rtt_ms": 50},
    }
    heads = {"gemma3-270m-kappa-critical-acceptance": (0.577, 0.646)}
    if ablation:
        heads["gemma3-270m-acceptance"] = (0.70, 0.70)
    for name, (poor, good) in heads.items():
        table = {
            "thresholds": list(range(17)),
            "channels": channels,
            "reject_share": {"poor": _curve(poor), "good": _curve(good)},
            "mismatches": 921,
        }
        (folder / f"{name}.json").write_text(json.dumps(table))


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[ClaimRow]]]:
    tables = tmp_path_factory.mktemp("wisv-tables")
    write_tables(tables)
    out = tmp_path_factory.mktemp("reproduce-wisv")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(semantic, "tables_dir", lambda: tables)
        rows = reproduce_wisv(out, quick=True, workers=1, progress=False, command="test")
    yield out, rows


def test_report_lists_every_claim(quick: tuple[Path, list[ClaimRow]]) -> None:
    out, rows = quick
    # With these stand-in heads no judged row misses: every WISV magnitude is Table I's
    # within ±25 %, and V4's misses are the model's, shown by construction.
    report = check_quick_report(out, rows, expect_miss=False)
    check_declared_files(out, "wisv")
    assert [r.claim_id for r in rows].count("V1") == 17
    assert {r.claim_id for r in rows} == {"V1", "V2", "V3", "V4", "Fig. 5"}
    for row in rows:
        assert f"| {row.claim_id} | {row.what} |" in report
    assert "**round time**" in report and "18.91 ms" in report
    assert "## The decision head's reject shares at T = 12" in report
    assert "| gemma3-270m-kappa-critical | 0.577 | 0.646 |" in report
    assert "| gemma3-270m | 0.700 | 0.700 |" in report
    results = json.loads((out / "results.json").read_text())
    paper = len(RTTS_MS) * len(RATES_MBPS) * len(METHODS) * len(GAMMAS)
    assert len(results["runs"]) == paper + 10 + 10  # Fig. 5's ablation, the calibrated head
    # the named mode: one reject share a link, fitted at γ = 64, its section apart
    calibrated = yaml.safe_load(
        (out / "scenarios" / "fh-calibrated-g10-20mbps-rtt50.yaml").read_text()
    )
    assert calibrated["verification"] == {
        "rule": "semantic", "upload": "fh", "reject_share": round(calibrated_shares(
            WisvPlan.quick_plan().setup)[20.0], 6),
    }  # fmt: skip
    assert "\n## Named mode: calibrated head (not in the headline)\n" in report
    assert "| V1 | [calibrated head] Table I AAL (committed per round), WISV FH, 20 Mbit/s, " \
           "γ = 64 |" in report  # fmt: skip
    assert results["answers_per_run"] == WisvPlan.quick_plan().answers
    check_left_out_last(report, left_out(WisvPlan.quick_plan()))
    assert report.endswith("\n- every run (V1–V4, Fig. 5's ablation): sized for 100 answers "
                           "(full: 500)\n")  # fmt: skip
    fh = yaml.safe_load((out / "scenarios" / "fh-g64-20mbps-rtt50.yaml").read_text())
    assert fh["verification"]["upload"] == "fh" and fh["verification"]["threshold"] == 12.0
    # the bundled tables by name, not by this machine's path: the run folder's scenarios
    # load on any clone (a path in a scenario file is read against its folder)
    assert fh["verification"]["table"] == "gemma3-270m-kappa-critical"
    plain = yaml.safe_load(
        (out / "scenarios" / "fh-no-relabelling-g64-20mbps-rtt50.yaml").read_text()
    )
    assert plain["verification"]["table"] == "gemma3-270m"
    for path in (out / "scenarios").glob("*.yaml"):
        assert "acceptance.json" not in path.read_text(), path
    assert results["held_out_mismatches"] == {"gemma3-270m-kappa-critical": 921, "gemma3-270m": 921}
    head = results["heads"]["gemma3-270m-kappa-critical"]
    assert head["channel_shares"] == pytest.approx([0.577, 0.646])
    assert head["qualities"] == pytest.approx([0.4337, 0.8997], abs=1e-4)
    assert (head["budget"], head["label_shares"]) == (None, None)  # these tables record none
    reject = yaml.safe_load((out / "scenarios" / "reject-g10-500mbps-rtt5.yaml").read_text())
    assert reject["temperature"] > 0 and "verification" not in reject


def test_what_the_quick_run_reproduces(quick: tuple[Path, list[ClaimRow]]) -> None:
    _, rows = quick
    by_what = {r.what: r for r in rows}
    # The rejection-sampling payload is arithmetic on the fitted round time: a setting,
    # shown (its verdicts still computed) and never judged.
    for rate in ("20", "500"):
        row = by_what[
            f"rejection sampling's extra time per round, γ × 128,256 × 16 bit / R, {rate} Mbit/s"
        ]
        assert row.outcome is Outcome.SETTING and row.holds and not row.quick_run
        assert row.setting.startswith("γ × V × 16 bits / R on top of the round-time fit")
    # Rejection sampling is the slowest everywhere (by construction, not judged); FH beats
    # greedy everywhere.
    slowest = by_what["rejection-sampling SD the slowest method (Fig. 4, 4 scenarios × 5 windows)"]
    assert slowest.holds and slowest.outcome is Outcome.BY_CONSTRUCTION
    assert by_what[
        "WISV FH faster than greedy in every Fig. 4 setting (4 scenarios × 5 windows)"
    ].holds
    # The headline cut's magnitude is judged, as in the full run: means per answer do not
    # wait for 500 answers (100 answers give the full run's per-run means within 2.5 %,
    # every judged magnitude at least 17 points outside its ±25 %: docs/REPRODUCE.md).
    # With this test's reject-share tables it holds; with the shipped ones it misses, for
    # the head's cause.
    headline = by_what["WISV FH latency vs greedy, γ = 64, 500 Mbit/s"]
    assert headline.direction_ok is None  # a cut by construction: its magnitude is judged
    assert headline.magnitude_ok and headline.outcome is Outcome.HOLDS
    assert not any(r.quick_run or r.cause is Cause.QUICK_RUN for r in rows)
    # At RTT 50 ms on the good link SH pays its round trip.
    assert by_what[
        "Fig. 4, RTT 50 ms, 500 Mbit/s: sign of SH − FH latency, γ = 10/16/24/32/64"
    ].holds
    # The head without relabelling rejects more on the poor link than WISV's relabelled
    # one, by 0.123 = 5.5 standard errors over 921 mismatches: lower AAL, higher latency.
    assert [r.holds for r in rows if r.claim_id == "Fig. 5"] == [True, True]
    assert (
        by_what["the poor link (20 Mbit/s) more permissive than the good (500): WISV FH AAL"].note
        == "the head's reject share, 500 − 20 Mbit/s: 0.646 − 0.577 = +0.069, +3.0 standard errors"
    )


def test_rows_a_fitted_input_fixes_are_settings(quick: tuple[Path, list[ClaimRow]]) -> None:
    _, rows = quick
    settings = [r for r in rows if r.outcome is Outcome.SETTING]
    # V1: greedy and rejection sampling's AAL and rounds at both rates (α = 0.9); V2:
    # greedy's latency and throughput at both rates (18.91 ms per token + RTT); V3: all 8
    # but "the slowest", which the model's construction decides.
    assert [r.claim_id for r in settings].count("V1") == 8
    assert [r.claim_id for r in settings].count("V2") == 4
    assert [r.claim_id for r in settings].count("V3") == 7
    # V4: the RTT 50 ms, 20 Mbit/s sign, which the reading of "large windows" decides
    assert [r.claim_id for r in settings].count("V4") == 1
    assert len(settings) == 20
    built = [r.what for r in rows if r.outcome is Outcome.BY_CONSTRUCTION]
    assert built == [
        "WISV FH's AAL gain over greedy grows with γ, 20 Mbit/s",
        "WISV FH's AAL gain over greedy grows with γ, 500 Mbit/s",
        "WISV FH's latency reduction over greedy grows with γ, 500 Mbit/s",
        "rejection-sampling SD the slowest method (Fig. 4, 4 scenarios × 5 windows)",
        "Fig. 4, RTT 50 ms, 500 Mbit/s: sign of SH − FH latency, γ = 10/16/24/32/64",
        "Fig. 4, RTT 5 ms, 20 Mbit/s: sign of SH − FH latency, γ = 10/16/24/32/64",
        "WISV FH faster than greedy in every Fig. 4 setting (4 scenarios × 5 windows)",
        "RTT 50 ms: WISV SH slightly slower than greedy",
    ]
    # These stand-in tables record no labels' rule: the signs of two shares are judged.
    assert not any(r.by_construction for r in rows if r.claim_id == "Fig. 5")
    assert all("WISV" not in r.what for r in settings if r.claim_id in ("V1", "V2"))
    assert {r.setting.split(",")[0] for r in settings} == {
        "α = 0.9",
        "18.91 ms per drafted token + the RTT",
        "γ × V × 16 bits / R on top of the round-time fit (18.91 ms per drafted token + the RTT",
        'the reading of "large windows" decides it: read as γ ≥ 32 (chosen) the row misses',
    }


def test_without_the_ablation_table_fig5_is_not_judged() -> None:
    res = WisvResults(WisvPlan.quick_plan(), {}, {}, ablation=False)
    rows = fig5_rows(res)
    assert [r.outcome for r in rows] == [Outcome.NOT_JUDGED] * 2
    assert all(
        r.note.startswith(
            "not judged: edgespec/data/wisv/gemma3-270m-acceptance.json (the head "
            "trained without relabelling) does not exist; `edgespec train wisv` writes it"
        )
        for r in rows
    )


def test_the_payload_arithmetic() -> None:
    p = WisvSetup().payloads()
    # γ × V × 16 bits at 20 Mbit/s: 6.567 s at γ = 64 (Table I implies 6.577 s)
    assert per_round_extra_s(p, 64, 20.0) == pytest.approx(64 * 128_256 * 16 / 20e6)
    # The runs' durations are sized from the same model: greedy's estimate is Table I's
    # within a few percent at γ = 16 (α = 0.9 commits 8.33 a round; Table I: 8.336).
    estimate = WisvSetup().estimated_latency_s("greedy", 16, 500.0, 50.0)
    assert estimate == pytest.approx(8.842, rel=0.03)
