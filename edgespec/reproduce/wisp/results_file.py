"""``edgespec reproduce wisp``'s ``results.json``: every number the claims use, from
:class:`~edgespec.reproduce.wisp.runs.WispResults` (the runs' goodputs and violation rates
as :func:`goodputs` and :func:`violations` write them)."""

from __future__ import annotations

from typing import Any

from edgespec.metrics.types import SystemMetrics
from edgespec.reproduce.wisp.runner import LATE_RULE
from edgespec.reproduce.wisp.runs import WispResults
from edgespec.reproduce.wisp.setup import CLASSES
from edgespec.sweeps.capacity import class_violation


def results_dict(res: WispResults) -> dict[str, Any]:
    """results.json: every number the claims use."""
    op = res.operating
    return {
        "setup": res.plan.setup.to_dict(),
        "late_rule": {"rule": LATE_RULE, "sensitivity_capacity": res.late.capacity},
        "unfinished_sensitivity_capacity": None
        if res.unfinished is None
        else {
            "finished_only": res.unfinished.finished_only,
            "sure_misses": res.unfinished.sure_misses,
        },
        "capacities": [
            {"system": s, "target": t, "class": c, "devices": v}
            for (s, t, c), v in sorted(res.capacities.items())
        ],
        "wisp_capacities_other_late_rules": [
            {"rule": r, "target": t, "class": c, "devices": v}
            for (r, t, c), v in sorted(res.other_rules.items())
        ],
        "goodput": {s: goodputs(m) for s, m in res.goodput.items()},
        "wisp_goodput_other_late_rules": [
            {"rule": r, "system": s, **goodputs(m)}
            for (r, s), m in sorted(res.other_goodput.items())
        ],
        "curves": [
            {"system": s, "devices": n, "violation": violations(m), **goodputs(m)}
            for (s, n), m in sorted(res.curves.items())
        ],
        "operating_point": None
        if op is None
        else {
            "devices": op.devices,
            "probed": list(op.probed),
            "fcfs_c4_violation": [{"devices": n, "rate": r} for n, r in op.points],
            "runs": {
                s: {"violation": violations(m), **goodputs(m)} for s, m in res.at_operating.items()
            },
        },
        "attribution": None
        if res.attribution is None
        else {
            "rounds_with_deadline": res.attribution.num_rounds_with_deadline,
            "violated": res.attribution.num_violated,
            "compute_dominant": res.attribution.num_compute_dominant,
        },
    }


def violations(m: SystemMetrics) -> dict[str, float]:
    return {c: class_violation(c)(m) for c in CLASSES}


def goodputs(m: SystemMetrics) -> dict[str, float | None]:
    return {
        "committed_goodput_tokens_per_s": m.committed_goodput_tokens_per_s,
        "goodput_tokens_per_s": m.goodput_tokens_per_s,
    }
