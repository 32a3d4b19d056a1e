"""WISV's named mode *calibrated head*: one reject share a link, fitted in expectation to
Table I's WISV AAL at γ = 64 (those cells settings), every other WISV FH cell judged out of
sample; rebuilt from the full run's committed results."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from edgespec.reproduce.claims import Cause, Outcome, headline
from edgespec.reproduce.wisv.calibrated import (
    FIT_GAMMA,
    calibrated_rows,
    calibrated_shares,
    fitted_share,
)
from edgespec.reproduce.wisv.runs import CALIBRATED, WisvPlan, results_from_dict, run_name
from edgespec.reproduce.wisv.setup import WisvSetup
from edgespec.reproduce.wisv.table_i import TABLE_I
from edgespec.sim.model.semantic import expected_committed

FULL = Path(__file__).parents[3] / "benchmarks" / "results" / "reproduce-wisv-full.json"


def test_each_links_share_gives_table_is_wisv_aal_at_gamma_64_in_expectation() -> None:
    shares = calibrated_shares(WisvSetup())
    assert shares == pytest.approx({20.0: 0.5633, 500.0: 0.6366}, abs=1e-4)
    for rate, share in shares.items():
        paper = TABLE_I[("fh", rate)][FIT_GAMMA][1]
        assert expected_committed(0.9, share, FIT_GAMMA) == pytest.approx(paper, rel=1e-12)
    with pytest.raises(ValueError, match=r"^9\.0 committed tokens a round at γ = 64 is outside "
                       r"what any reject share gives \(9\.989–65\.000\)$"):  # fmt: skip
        fitted_share(0.9, 9.0, 64)  # below greedy's: no head commits that few


def test_the_named_modes_rows_from_the_full_run() -> None:
    res = results_from_dict(json.loads(FULL.read_text()), WisvPlan.full())
    rows = calibrated_rows(res)
    assert (
        headline(rows)
        == "12 rows: 8 hold, 0 hold in direction only, 0 miss, 4 setting, not a claim"
    )
    settings = [r for r in rows if r.outcome is Outcome.SETTING]
    assert [r.what.split(", ")[-1] for r in settings] == ["γ = 64"] * 4
    assert all(r.what.startswith("[calibrated head] Table I ") for r in rows)
    assert all(r.setting.startswith("the reject share 0.") for r in settings)
    # a cell out of sample 30 % off the paper's is a miss with its cause
    name = run_name(CALIBRATED, 10, 500.0, 50.0)
    cell = res.runs[name]
    off = replace(res, runs={**res.runs, name: replace(cell, latency_s=cell.latency_s * 1.5)})
    latency = next(r for r in calibrated_rows(off) if "latency per answer" in r.what
                   and "500 Mbit/s" in r.what)  # fmt: skip
    assert latency.outcome is Outcome.MISS and latency.cause is Cause.MODELLING
    assert "outside: γ = 10: +" in latency.note
