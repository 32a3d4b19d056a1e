"""The committed full runs' rows, rebuilt by the current code from their results.json
(benchmarks/results/reproduce-*-full.json), give the headlines docs/REPRODUCE.md states: a
change to a verdict's rule fails here until the docs say what it makes of the runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.reproduce.claims import headline
from edgespec.reproduce.dsd.modes import headline_lines
from edgespec.reproduce.dsd.runs import DsdPlan, results_from_dict
from edgespec.reproduce.folder import RECORD_KEY
from edgespec.reproduce.wisv import claims as wisv_claims
from edgespec.reproduce.wisv import runs as wisv_runs
from edgespec.reproduce.zhu.claims import all_rows
from edgespec.reproduce.zhu.runs import ZhuPlan
from edgespec.reproduce.zhu.setup import ZhuSetup

RESULTS = Path(__file__).parents[2] / "benchmarks" / "results"
DOC = (Path(__file__).parents[2] / "docs" / "REPRODUCE.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_dsd_full_runs_headline_is_the_docs() -> None:
    data = json.loads((RESULTS / "reproduce-dsd-full.json").read_text())
    paper, named = headline_lines(results_from_dict(data, DsdPlan.full())).splitlines()
    assert paper == (
        "52 rows: 17 hold, 1 hold in direction only, 29 miss, 2 not judged, 2 setting, not a "
        "claim, 1 not comparable (setting not reached)"
    )
    assert named.endswith(
        "51 rows: 8 hold, 1 hold in direction only, 38 miss, 1 not judged, 2 setting, not a "
        "claim, 1 not comparable (setting not reached)"
    )
    assert "**52 rows: 17 hold, 1 hold in direction only, 29 miss, 2 not judged" in _flat(DOC)


def test_the_zhu_full_runs_headline_is_the_docs() -> None:
    data = json.loads((RESULTS / "reproduce-zhu-full.json").read_text())
    assert data["setup"] == ZhuSetup().to_dict()  # the run's chosen inputs are today's
    rows = all_rows(data["draws"], ZhuSetup(), ZhuPlan.full(), False)
    said = (
        "21 rows: 4 hold, 3 hold in direction only, 3 miss, 1 not judged, 6 setting, not a "
        "claim, 4 by construction, not judged"
    )
    assert headline(rows) == said
    assert f"(e.g. Zhu's `{said}`)" in _flat(DOC)


def test_the_wisv_full_runs_headline_is_the_docs() -> None:
    data = json.loads((RESULTS / "reproduce-wisv-full.json").read_text())
    results = wisv_runs.results_from_dict(data, wisv_runs.WisvPlan.full())
    assert wisv_runs.results_dict(results) == {k: v for k, v in data.items() if k != RECORD_KEY}
    said = (
        "42 rows: 0 hold, 0 hold in direction only, 11 miss, 20 setting, not a claim, 11 by "
        "construction, not judged"
    )
    assert headline(wisv_claims.all_rows(results)) == said
    assert f"REPORT.md's headline: `{said}`" in _flat(DOC)


def test_wisv_results_of_another_plan_are_refused() -> None:
    data = json.loads((RESULTS / "reproduce-wisv-full.json").read_text())
    with pytest.raises(ValueError, match="setup answers_per_run is 500, the plan's is 100"):
        wisv_runs.results_from_dict(data, wisv_runs.WisvPlan.quick_plan())
