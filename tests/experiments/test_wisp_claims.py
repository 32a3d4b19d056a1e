"""WISP claim rows on hand-built results: the numbers shown and each verdict."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from edgespec.core.types import RequestRecord
from edgespec.experiments.claims import write_report
from edgespec.experiments.reproduce_wisp import Plan, WispResults
from edgespec.experiments.wisp_claims import (
    attribution_row,
    capacity_rows,
    curve_rows,
    goodput_row,
)
from edgespec.experiments.wisp_setup import CLASSES, choices
from edgespec.metrics import SystemMetrics, summarize
from edgespec.metrics.attribution import ViolatedRound, ViolationAttribution

PLAN = Plan.quick()  # classes c2 and c8, qwen3-32b


def metrics(violations: dict[str, float]) -> SystemMetrics:
    """20 finished requests per class, the given share of them too slow for their class."""
    records = []
    for cls, share in violations.items():
        target = CLASSES[cls]
        for i in range(20):
            slow = i < round(20 * share)
            records.append(
                RequestRecord(f"{cls}{i}", "d", cls, 0, 0.0, 0.1, 8 / target * (2 if slow else 1),
                              10, 8, 2, 8, 6, target)
            )  # fmt: skip
    return summarize(records, [], duration_s=10.0, num_servers=1)


def results(**kw: Any) -> WispResults:
    base: dict[str, Any] = dict(
        capacities={}, goodput={}, curves={}, attribution=None, attribution_devices=None
    )
    return WispResults(PLAN, **{**base, **kw})


def test_capacity_rows_order_ratios_and_the_widening_gap() -> None:
    caps = {("wisp", "qwen3-32b", "c2"): 160, ("centralized", "qwen3-32b", "c2"): 97,
            ("sled", "qwen3-32b", "c2"): 83, ("wisp", "qwen3-32b", "c8"): 30,
            ("centralized", "qwen3-32b", "c8"): 41, ("sled", "qwen3-32b", "c8"): None}  # fmt: skip
    c2, c8, gap = capacity_rows(results(capacities=caps), "qwen3-32b", "W1")
    assert (c2.paper, c2.ours) == ("164 / 97 / 83 (1.69×, 1.98×)", "160 / 97 / 83 (1.65×, 1.93×)")
    assert (c2.direction_ok, c2.magnitude_ok) == (True, True)
    assert c8.ours == "30 / 41 / none (0.73×, n/a×)"
    assert (c8.direction_ok, c8.magnitude_ok) == (False, False)
    assert (gap.ours, gap.direction_ok) == ("1.65 → 0.73", False)


def test_goodput_row() -> None:
    row = goodput_row(results(goodput={"wisp": 600.0, "centralized": 326.0, "sled": 100.0}))
    assert row.ours == "600 / 326 / 100 (1.84×, 6.00×)"
    assert (row.direction_ok, row.magnitude_ok) == (True, False)  # 6.0 is beyond 3.70 ± 25%


def test_curve_rows_find_the_fcfs_operating_point() -> None:
    low = {"c2": 0.0, "c4": 0.0, "c6": 0.0, "c8": 0.1}
    curves = {
        ("fcfs", 60): metrics(low),
        ("fcfs", 120): metrics({"c2": 0.0, "c4": 0.4, "c6": 0.9, "c8": 1.0}),
        ("wisp", 60): metrics(low),
        ("wisp", 120): metrics({"c2": 0.0, "c4": 0.15, "c6": 0.8, "c8": 1.0}),
    }
    main, c2, knee4, knee6 = curve_rows(results(curves=curves))
    assert "N = 120" in main.what
    assert main.ours == "WISP 100.0% / 80.0% / 15.0% / 0.0% vs FCFS 100.0% / 90.0% / 40.0% / 0.0%"
    assert main.direction_ok is True and c2.direction_ok is True
    assert (knee4.ours, knee4.direction_ok) == ("120 vs 120", False)  # both cross 5% at 120
    assert knee6.ours == "120 vs 120"
    curves[("wisp", 120)] = metrics({"c2": 0.0, "c4": 0.25, "c6": 0.8, "c8": 1.0})
    assert curve_rows(results(curves=curves))[0].direction_ok is False  # 25% > ½ of 40%


def test_attribution_row() -> None:
    violated = tuple(
        ViolatedRound("r", i, 0, 0.1, 0.2, rho, rho > 1.5) for i, rho in enumerate((2.0, 1.6, 1.0))
    )
    row = attribution_row(results(attribution=ViolationAttribution(20, 1.5, 10, violated),
                                  attribution_devices=120))  # fmt: skip
    assert (row.ours, row.direction_ok) == ("66.7% (2 of 3)", True)
    assert attribution_row(results()).direction_ok is False


def test_report_lists_rows_and_choices(tmp_path: Path) -> None:
    row = goodput_row(results(goodput={"wisp": 600.0, "centralized": 326.0, "sled": 170.0}))
    path = tmp_path / "REPORT.md"
    write_report(path, "WISP", "edgespec reproduce wisp", [row], choices(PLAN.setup), ["a.yaml"])
    text = path.read_text()
    assert "| W3 | goodput" in text and "direction ✓, magnitude ✓" in text
    assert "1 rows; 1 hold: no verdict failed" in text
    miss = dataclasses.replace(row, magnitude_ok=False)
    write_report(path, "WISP", "cmd", [row, miss, dataclasses.replace(row, direction_ok=None)],
                 [], [])  # fmt: skip
    assert "3 rows; 2 hold" in path.read_text()  # an absolute value within tolerance holds
    assert "60 simulated seconds" in text and "- `a.yaml`" in text
