"""A load run's report: what was run, every request's fate, the metrics of the finished
requests (:mod:`edgespec.metrics`, as ``edgespec sim`` computes them), errors by gRPC code,
SLO attainment per class with the arrivals never served counted as misses, the check
against centralized decoding, the server's own counts beside the clients', its verification
passes as its counters tell them (``null``, "not measured", without them), and the faults as
applied; printed as Markdown, written as JSON."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

from edgespec.metrics.summary import plain, summarize
from edgespec.metrics.types import LatencyStats, SloClassStats, SystemMetrics
from edgespec.runtime.loadgen.check import CheckResult
from edgespec.runtime.loadgen.outcome import FaultEvent, RunOutcome
from edgespec.runtime.loadgen.scrape import Agreement, ServerFigures

MESSAGE_CHARS = 160  # an error message as the Markdown quotes it
LATE_FAULT_S = 0.5  # a fault applied this much after it was due says when it was due
SERVER_SIDE = ("throughput_tokens_per_s", "num_batches", "num_forwarded_tokens",
               "num_cached_tokens", "mean_batch_size", "batch_sizes", "server_busy_s",
               "server_utilization", "mean_server_utilization")  # fmt: skip
"""The metrics only the server's batch records give: the clients cannot count them, so the
bench reports them from the server's counters (:class:`ServerFigures`) or as ``null``;
``num_cached_tokens`` and ``batch_sizes`` always ``null`` (its page has no counter of cached
tokens, and batch sizes in histogram buckets only)."""


@dataclass(frozen=True, slots=True)
class SloRow:
    """One SLO class's attainment with its never-served arrivals counted as misses:
    ``num_met / (num_with_target + num_never_served)``; ``None`` for a class without a
    target. Failed, killed and lost requests are not counted (they have no token speed)."""

    slo_class: str
    target_tokens_per_s: float | None
    num_finished: int
    num_never_served: int
    num_met: int
    attainment: float | None


def slo_rows(metrics: SystemMetrics, outcome: RunOutcome) -> tuple[SloRow, ...]:
    """Each class of the finished requests or of the never-served arrivals, in that order."""
    never = Counter(n.slo_class for n in outcome.never_served)
    targets = {n.slo_class: n.target_tokens_per_s for n in outcome.never_served}
    stats = {c.slo_class: c for c in metrics.slo_classes}
    for name in never:
        stats.setdefault(name, SloClassStats(name, targets[name], 0, 0, 0, None))
    rows = []
    for c in stats.values():
        missed = never[c.slo_class]
        target = c.target_tokens_per_s if c.num_requests else targets[c.slo_class]
        attainment = None
        if target is not None:
            attainment = c.num_met / (c.num_with_target + missed)
        rows.append(SloRow(c.slo_class, target, c.num_requests, missed, c.num_met, attainment))
    return tuple(rows)


def first_messages(outcome: RunOutcome) -> dict[str, str]:
    """Each error code's first message (in the order the failures were reported)."""
    first: dict[str, str] = {}
    for f in outcome.failed:
        first.setdefault(f.code, f.message)
    return dict(sorted(first.items()))


def clip(text: str, num_chars: int = MESSAGE_CHARS) -> str:
    """``text`` on one line, at most ``num_chars`` characters (``…`` where cut)."""
    line = " ".join(text.split())
    return line if len(line) <= num_chars else line[: num_chars - 1] + "…"


@dataclass(frozen=True, slots=True)
class LoadReport:
    """``setup``: the run's settings as given; ``metrics``: over the finished requests and
    the run's span (first arrival to last finish); ``lost``: requests that neither finished,
    failed with a code, nor were killed by a fault (the bar is 0); ``never served``: Poisson
    arrivals no client started (``dropped`` with the queue full, ``unserved`` still queued
    when the arrivals ended), misses of their SLO class (:class:`SloRow`); ``orphaned_sessions``:
    sessions the server still held at the end (killed clients' sessions wait for the idle
    timeout); ``agreement``: ``None`` with ``agreement_note`` saying why when not compared;
    ``server``: the server's passes, ``None`` with ``server_note`` saying why when not
    measured."""

    setup: dict[str, Any]
    outcome: RunOutcome
    metrics: SystemMetrics
    check: CheckResult | None
    orphaned_sessions: int | None
    agreement: tuple[Agreement, ...] | None
    agreement_note: str
    server: ServerFigures | None = None
    server_note: str = ""

    @property
    def errors_by_code(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.outcome.failed).items()))

    @property
    def num_reconnects(self) -> int:
        return sum(f.num_reconnects for f in self.outcome.finished)

    @property
    def num_resends(self) -> int:
        return sum(f.num_resends for f in self.outcome.finished)

    @property
    def slo_rows(self) -> tuple[SloRow, ...]:
        return slo_rows(self.metrics, self.outcome)

    @property
    def all_failed(self) -> bool:
        """Every request that started failed (and one did)."""
        return 0 < len(self.outcome.failed) == self.outcome.num_started

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        check = None
        if self.check is not None:
            check = {
                "num_checked": self.check.num_checked,
                "num_references": self.check.num_references,
                "num_mismatches": len(self.check.mismatches),
                "mismatches": [dataclasses.asdict(m) for m in self.check.mismatches],
                "failure": self.check.failure,
            }
        return {
            "setup": self.setup,
            "run_tag": o.run_tag,
            "requests": {
                "arrived": o.num_arrived,
                "started": o.num_started,
                "finished": len(o.finished),
                "failed": len(o.failed),
                "killed": len(o.killed),
                "lost": len(o.lost),
                "lost_ids": [{"request_id": r, "why": w} for r, w in o.lost],
                "never_served": len(o.never_served),
                "dropped": o.num_dropped,
                "unserved": o.num_unserved,
                "reconnects": self.num_reconnects,
                "resends": self.num_resends,
            },
            "errors_by_code": self.errors_by_code,
            "error_messages": sorted({f"{f.code}: {f.message}" for f in o.failed})[:20],
            "metrics": metrics_dict(self.metrics, self.server),
            "slo_attainment": [dataclasses.asdict(r) for r in self.slo_rows],
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


def metrics_dict(metrics: SystemMetrics, server: ServerFigures | None) -> dict[str, Any]:
    """``metrics`` as JSON with its :data:`SERVER_SIDE` fields from ``server`` over the
    run's span (busy time clipped to it, as the accumulator clips batches), or ``null``."""
    out = metrics.to_dict() | dict.fromkeys(SERVER_SIDE)
    if server is None:
        return out
    duration_s = metrics.duration_s
    busy_s = min(server.busy_s, duration_s)
    mean_size = server.num_batched_sessions / server.num_batches if server.num_batches else None
    return out | {
        "throughput_tokens_per_s": server.num_forwarded_tokens / duration_s,
        "num_batches": server.num_batches,
        "num_forwarded_tokens": server.num_forwarded_tokens,
        "mean_batch_size": mean_size,
        "server_busy_s": [busy_s],
        "server_utilization": [busy_s / duration_s],
        "mean_server_utilization": busy_s / duration_s,
    }


def _server_line(report: LoadReport) -> str:
    """The server's passes in one line, or why they are not measured."""
    s = report.server
    if s is None:
        note = report.server_note
        return f"server passes: not measured ({note})" if note else "server passes: not measured"
    m = metrics_dict(report.metrics, s)
    return (f"server passes: {plain(s.num_batches)} (mean batch {plain(m['mean_batch_size'])} "
            f"sessions), {plain(s.num_forwarded_tokens)} tokens forwarded "
            f"({plain(m['throughput_tokens_per_s'])} tokens/s), utilization "
            f"{plain(m['mean_server_utilization'])}")  # fmt: skip


def _ms(stats: LatencyStats | None) -> list[str]:
    if stats is None:
        return ["-"] * 3
    return [plain(1e3 * v) for v in (stats.p50_s, stats.p90_s, stats.p99_s)]


def markdown(report: LoadReport) -> str:
    """The report as Markdown tables."""
    o, m = report.outcome, report.metrics
    setup = ", ".join(f"{k} {v}" for k, v in report.setup.items())
    lines = [f"## edgespec bench serve (run {o.run_tag}): {setup}", ""]
    lines += ["| requests | arrived | started | finished | failed | killed by a fault | lost "
              "| never served (dropped, unserved) | reconnects |"]  # fmt: skip
    lines += ["|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| | {o.num_arrived} | {o.num_started} | {len(o.finished)} | {len(o.failed)} "
              f"| {len(o.killed)} | **{len(o.lost)}** | {len(o.never_served)} ({o.num_dropped}, "
              f"{o.num_unserved}) | {report.num_reconnects} |", ""]  # fmt: skip
    lines += [f"errors by gRPC code: {_errors(report)}", ""]
    lines += ["| latency (ms) | p50 | p90 | p99 |", "|---|---|---|---|"]
    for label, stats in (("TTFT", m.ttft), ("TPOT", m.tpot), ("E2E", m.e2e)):
        lines.append(f"| {label} | " + " | ".join(_ms(stats)) + " |")
    lines += ["", f"goodput {plain(m.goodput_tokens_per_s)} tokens/s over "
              f"{plain(m.duration_s)} s; acceptance {plain(m.acceptance_rate)}",
              _server_line(report), ""]  # fmt: skip
    if rows := report.slo_rows:
        lines += ["| SLO class | target tokens/s | finished | never served | attainment |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for r in rows:
            lines.append(f"| {r.slo_class} | {plain(r.target_tokens_per_s)} | {r.num_finished} "
                         f"| {r.num_never_served} | {plain(r.attainment)} |")  # fmt: skip
        lines.append("")
    lines += _check_lines(report)
    for f in o.faults:
        back = "" if f.restart_s is None else f"; serving again after {f.restart_s:.1f} s"
        lines.append(f"- fault at {f.at_s:.1f} s{_why_late(f)}: {f.kind}: {f.detail}{back}")
    return "\n".join(lines)


def _why_late(fault: FaultEvent) -> str:
    """Why ``fault`` came later than it was due, when it did: a restart before it still
    running, its own wait for a request mid-generation to interrupt (``""``: on time)."""
    said = []
    if fault.due_s is not None and fault.at_s - fault.waited_s - fault.due_s > LATE_FAULT_S:
        said.append(f"due at {fault.due_s:.1f} s: a restart before it was still running")
    if fault.waited_s > LATE_FAULT_S:
        said.append(f"waited {fault.waited_s:.1f} s for a request mid-generation")
    return f" ({'; '.join(said)})" if said else ""


def _errors(report: LoadReport) -> str:
    """``CODE N (first: "message"), ...``, or ``none``."""
    first = first_messages(report.outcome)
    return ", ".join(f'{code} {n} (first: "{clip(first[code])}")'
                     for code, n in report.errors_by_code.items()) or "none"  # fmt: skip


def all_failed_line(reports: tuple[LoadReport, ...]) -> str | None:
    """One line when some mode's every request failed (the run measured nothing), else
    ``None``: the mode, how many, and each code's first message."""
    for r in reports:
        if r.all_failed:
            errors = "; ".join(f"{code}: {clip(message)}"
                               for code, message in first_messages(r.outcome).items())  # fmt: skip
            return (f"every request failed ({r.setup.get('mode', '')}: {len(r.outcome.failed)} "
                    f"of {r.outcome.num_started}): {errors}")  # fmt: skip
    return None


def _check_lines(report: LoadReport) -> list[str]:
    lines = []
    if report.check is not None and report.check.failure is not None:
        lines.append(f"centralized check: **failed** ({report.check.failure})")
    elif report.check is not None:
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
