"""Whether the late-request rule decides W1's, W2's and W3's verdicts.

What WISP does with a request that cannot meet its deadline even alone the paper does not
say (SEED-NOTES §1.4 item 8); every claim runs under :data:`~.runner.LATE_RULE`. The full
and the quick run also search WISP's capacity under the other rules
(:func:`~.runs.other_rule_jobs`) and run W3's WISP systems under them
(:func:`~.runs.other_goodput_jobs`), and a row whose outcome another rule changes is
shown as a setting with each rule's verdict, as Zhu's ADS and Static sizes and DSD's fused
mode are: the chosen input, not the run, decides it. A row every rule gives the same
outcome stays judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from edgespec.reproduce.claims import ClaimRow
from edgespec.reproduce.wisp.runner import LATE_RULE
from edgespec.reproduce.wisp.runs import WispResults


def under_rule(res: WispResults, rule: str) -> WispResults:
    """``res`` with WISP's capacities the searches under ``rule`` found, and W3's runs of
    the WISP systems under it."""
    capacities = dict(res.capacities)
    for (found_under, target, cls), value in res.other_rules.items():
        if found_under == rule:
            capacities[("wisp", target, cls)] = value
    goodput = dict(res.goodput)
    goodput.update({s: m for (run_under, s), m in res.other_goodput.items() if run_under == rule})
    return replace(res, capacities=capacities, goodput=goodput)


def rule_decides(
    rows_of: Callable[[WispResults], list[ClaimRow]], res: WispResults
) -> list[ClaimRow]:
    """``rows_of(res)``, each row whose outcome another late-request rule changes turned
    into a setting naming every rule's verdict (the rows built again from
    :func:`under_rule`'s results)."""
    rows = rows_of(res)
    rules = sorted({rule for rule, *_ in (*res.other_rules, *res.other_goodput)})
    others = {rule: rows_of(under_rule(res, rule)) for rule in rules}
    decided = []
    for index, row in enumerate(rows):
        alternatives = [(rule, others[rule][index]) for rule in rules]
        assert all(other.what == row.what for _, other in alternatives)  # the same row
        if row.setting or all(other.outcome is row.outcome for _, other in alternatives):
            decided.append(row)
            continue
        each = "; ".join(f"“{rule}” {other.verdict} ({other.ours})" for rule, other in alternatives)
        decided.append(replace(row, setting=(
            "the late-request rule decides it (not given, SEED-NOTES §1.4 item 8): the chosen "
            f"“{LATE_RULE}” {row.verdict}; {each}")))  # fmt: skip
    return decided
