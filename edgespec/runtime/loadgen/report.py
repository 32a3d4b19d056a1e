"""A load run's report: what was run, every request's fate, the metrics of the finished
requests (:mod:`edgespec.metrics`, as ``edgespec sim`` computes them), errors by gRPC code,
the check against centralized decoding, the server's own counts beside the clients', and
the faults as applied; printed as Markdown, written as JSON."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

from edgespec.metrics.summary import plain, summarize
from edgespec.metrics.types import LatencyStats, SystemMetrics
from edgespec.runtime.loadgen.check import CheckResult
from edgespec.runtime.loadgen.run import RunOutcome
from edgespec.runtime.loadgen.scrape import Agreement


@dataclass(frozen=True, slots=True)
class LoadReport:
    """``setup``: the run's settings as given; ``metrics``: over the finished requests and
    the run's span (first arrival to last finish); ``lost``: requests that neither finished,
    failed with a code, nor were killed by a fault (the bar is 0); ``orphaned_sessions``:
    sessions the server still held at the end (killed clients' sessions wait for the idle
    timeout); ``agreement``: ``None`` with ``agreement_note`` saying why when not compared."""

    setup: dict[str, Any]
    outcome: RunOutcome
    metrics: SystemMetrics
    check: CheckResult | None
    orphaned_sessions: int | None
    agreement: tuple[Agreement, ...] | None
    agreement_note: str

    @property
    def errors_by_code(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.outcome.failed).items()))

    @property
    def num_reconnects(self) -> int:
        return sum(f.num_reconnects for f in self.outcome.finished)

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        check = None
        if self.check is not None:
            check = {
                "num_checked": self.check.num_checked,
                "num_references": self.check.num_references,
                "num_mismatches": len(self.check.mismatches),
                "mismatches": [dataclasses.asdict(m) for m in self.check.mismatches],
            }
        return {
            "setup": self.setup,
            "requests": {
                "started": o.num_started,
                "finished": len(o.finished),
                "failed": len(o.failed),
                "killed": len(o.killed),
                "lost": len(o.lost),
                "lost_ids": [{"request_id": r, "why": w} for r, w in o.lost],
                "reconnects": self.num_reconnects,
            },
            "errors_by_code": self.errors_by_code,
            "error_messages": sorted({f"{f.code}: {f.message}" for f in o.failed})[:20],
            "metrics": self.metrics.to_dict(),
            "check": check,
            "orphaned_sessions": self.orphaned_sessions,
            "agreement": None
            if self.agreement is None
            else [dataclasses.asdict(a) | {"agrees": a.agrees} for a in self.agreement],
            "agreement_note": self.agreement_note,
            "faults": [dataclasses.asdict(f) for f in o.faults],
        }


def run_metrics(outcome: RunOutcome) -> SystemMetrics:
    """The finished requests' metrics over the run's span."""
    records = (f.record for f in outcome.finished)
    return summarize(records, (), max(outcome.end_s - outcome.start_s, 1e-9), 1)


def _ms(stats: LatencyStats | None) -> list[str]:
    if stats is None:
        return ["-"] * 3
    return [plain(1e3 * v) for v in (stats.p50_s, stats.p90_s, stats.p99_s)]


def markdown(report: LoadReport) -> str:
    """The report as Markdown tables."""
    o, m = report.outcome, report.metrics
    setup = ", ".join(f"{k} {v}" for k, v in report.setup.items())
    lines = [f"## edgespec bench serve: {setup}", ""]
    lines += ["| requests | started | finished | failed | killed by a fault | lost | reconnects |"]
    lines += ["|---|---|---|---|---|---|---|"]
    lines += [f"| | {o.num_started} | {len(o.finished)} | {len(o.failed)} | {len(o.killed)} "
              f"| **{len(o.lost)}** | {report.num_reconnects} |", ""]  # fmt: skip
    errors = ", ".join(f"{code} {n}" for code, n in report.errors_by_code.items()) or "none"
    lines += [f"errors by gRPC code: {errors}", ""]
    lines += ["| latency (ms) | p50 | p90 | p99 |", "|---|---|---|---|"]
    for label, stats in (("TTFT", m.ttft), ("TPOT", m.tpot), ("E2E", m.e2e)):
        lines.append(f"| {label} | " + " | ".join(_ms(stats)) + " |")
    lines += ["", f"goodput {plain(m.goodput_tokens_per_s)} tokens/s over "
              f"{plain(m.duration_s)} s; acceptance {plain(m.acceptance_rate)}", ""]  # fmt: skip
    if m.slo_classes:
        lines += ["| SLO class | target tokens/s | requests | attainment |", "|---|---|---|---|"]
        for c in m.slo_classes:
            lines.append(f"| {c.slo_class} | {plain(c.target_tokens_per_s)} | {c.num_requests} "
                         f"| {plain(c.attainment)} |")  # fmt: skip
        lines.append("")
    lines += _check_lines(report)
    for f in o.faults:
        back = "" if f.restart_s is None else f"; serving again after {f.restart_s:.1f} s"
        lines.append(f"- fault at {f.at_s:.1f} s: {f.kind}: {f.detail}{back}")
    return "\n".join(lines)


def _check_lines(report: LoadReport) -> list[str]:
    lines = []
    if report.check is not None:
        c = report.check
        lines.append(
            f"centralized check: {c.num_checked} finished outputs against "
            f"{c.num_references} references, **{len(c.mismatches)} mismatches**"
        )
    if report.orphaned_sessions is not None:
        lines.append(f"sessions left open on the server at the end: {report.orphaned_sessions}")
    if report.agreement is None:
        lines += [f"server metrics vs clients: not compared ({report.agreement_note})", ""]
        return lines
    lines += ["", "| server metric (increase) | clients counted | server | clients | agree |"]
    lines += ["|---|---|---|---|---|"]
    for a in report.agreement:
        lines.append(f"| `{a.metric}` | {a.what} | {plain(a.server)} | {plain(a.clients)} "
                     f"| {'yes' if a.agrees else '**no**'} |")  # fmt: skip
    return [*lines, ""]


def summary(reports: tuple[LoadReport, ...]) -> dict[str, Any]:
    """The JSON of one invocation: each mode's report and, with two, the ratio of their
    goodputs (first / second)."""
    out: dict[str, Any] = {"runs": [r.to_dict() for r in reports]}
    if len(reports) == 2:
        first, second = (r.metrics.goodput_tokens_per_s for r in reports)
        out["goodput_ratio"] = first / second if second > 0 else None
    return out
