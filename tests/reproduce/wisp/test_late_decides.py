"""W1's capacity rows and W3's goodput row against each late-request rule: a row whose
outcome another rule changes is a setting naming every rule's verdict; one every rule gives
alike stays judged. (W3's rested on the chosen rule alone: no goodput ran under the others.)"""

from __future__ import annotations

from dataclasses import replace

from edgespec.reproduce.claims import ClaimRow, Outcome
from edgespec.reproduce.wisp.claims import capacity_rows, goodput_row
from edgespec.reproduce.wisp.late_decides import rule_decides
from edgespec.reproduce.wisp.runs import Plan
from tests.reproduce.wisp.results import goodput, results

PLAN = replace(Plan.full(), targets=("qwen3-32b",), classes=("c2", "c8"))
"""The full run's setting (no quick marks), two classes."""


def _rows(wisp_c2: dict[str, int], wisp_c8: dict[str, int]) -> list[ClaimRow]:
    capacities = {}
    for cls, (cent, sled) in {"c2": (97, 83), "c8": (41, 21)}.items():
        capacities[("centralized", "qwen3-32b", cls)] = cent
        capacities[("sled", "qwen3-32b", cls)] = sled
    capacities[("wisp", "qwen3-32b", "c2")] = wisp_c2["first"]
    capacities[("wisp", "qwen3-32b", "c8")] = wisp_c8["first"]
    others = {(rule, "qwen3-32b", cls): by_rule[rule]
              for cls, by_rule in (("c2", wisp_c2), ("c8", wisp_c8))
              for rule in ("utility", "last")}  # fmt: skip
    res = results(PLAN, capacities=capacities, other_rules=others)
    return rule_decides(lambda r: capacity_rows(r, "qwen3-32b", "W1"), res)


def test_a_row_another_rule_turns_is_a_setting_naming_each_rules_verdict() -> None:
    # c2: WISP 164 under every rule (1.69×, 1.98×: holds) ; c8: 86 first (2.10×, 4.10×),
    # but under "last" 30, below centralized's 41: the order fails there
    rows = _rows({"first": 164, "utility": 164, "last": 164},
                 {"first": 86, "utility": 80, "last": 30})  # fmt: skip
    c2, c8 = rows[0], rows[1]
    assert c2.outcome is Outcome.HOLDS and not c2.setting
    assert c8.outcome is Outcome.SETTING
    assert c8.setting == (
        "the late-request rule decides it (not given, SEED-NOTES §1.4 item 8): the chosen "
        "“first” direction ✓, magnitude ✓; “last” direction ✗, magnitude ✗ (30 / 41 / 21 "
        "(0.73×, 1.43×)); “utility” direction ✓, magnitude ✓ (80 / 41 / 21 (1.95×, 3.81×))"
    )
    unchanged = _rows({"first": 164, "utility": 150, "last": 140},
                      {"first": 86, "utility": 80, "last": 75})  # fmt: skip
    assert [r.outcome for r in unchanged[:2]] == [Outcome.HOLDS, Outcome.HOLDS]


def _w3(wisp_under: dict[str, float]) -> ClaimRow:
    runs = {"wisp": goodput(wisp_under["first"], 900.0), "centralized": goodput(800.0, 700.0),
            "sled": goodput(500.0, 450.0), "wisp-np": goodput(850.0, 800.0)}  # fmt: skip
    others = {(rule, "wisp"): goodput(wisp_under[rule], 900.0) for rule in ("utility", "last")}
    others |= {(rule, "wisp-np"): goodput(850.0, 800.0) for rule in ("utility", "last")}
    res = results(PLAN, goodput=runs, other_goodput=others)
    (row,) = rule_decides(lambda r: [goodput_row(r)], res)
    return row


def test_w3_is_a_setting_where_another_rule_turns_its_order() -> None:
    judged = _w3({"first": 1000.0, "utility": 980.0, "last": 960.0})  # WISP first under each
    assert judged.claim_id == "W3" and not judged.setting
    turned = _w3({"first": 1000.0, "utility": 980.0, "last": 760.0})  # "last": below centralized
    assert turned.outcome is Outcome.SETTING
    assert turned.setting is not None
    assert turned.setting.startswith(
        "the late-request rule decides it (not given, SEED-NOTES §1.4 item 8): the chosen "
        "“first” direction ✓"
    )
    assert "“last” direction ✗" in turned.setting and "760 / 800 / 500" in turned.setting
