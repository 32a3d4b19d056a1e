"""The calibration check's comparison: the same summary (TPOT, throughput, AAL, TTFT,
makespan, the per-round time split) of the real run and of the simulator's replay, computed
by the same code from their ``RequestRecord`` s, and the relative differences as a table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.calibration.runs import RealRun
from edgespec.core.types import RequestRecord


@dataclass(frozen=True, slots=True)
class RunSummary:
    """The compared quantities of one run."""

    tpot_s: float
    throughput_tokens_per_s: float
    aal: float
    ttft_s: float
    makespan_s: float
    num_requests: int
    num_output_tokens: int
    draft_ms_per_round: float
    network_ms_per_round: float
    queue_ms_per_round: float
    verify_ms_per_round: float


def summarize_records(records: Sequence[RequestRecord]) -> RunSummary:
    """TPOT and TTFT via :func:`edgespec.metrics.summary.summarize`; throughput over the
    makespan (first arrival to last finish)."""
    from edgespec.metrics.summary import summarize

    start = min(r.arrival_s for r in records)
    makespan = max(r.finish_s for r in records) - start
    m = summarize(records, [], makespan, 1)
    if m.tpot is None or m.aal is None or m.ttft is None:
        raise ValueError("calibration needs requests with >= 2 output tokens and >= 1 round")
    tokens = sum(r.num_output_tokens for r in records)
    rounds = sum(r.num_rounds for r in records)
    split = [1e3 * sum(getattr(r, k) for r in records) / rounds
             for k in ("draft_s", "network_s", "queue_s", "verify_s")]  # fmt: skip
    return RunSummary(
        m.tpot.mean_s, tokens / makespan, m.aal, m.ttft.mean_s, makespan, len(records), tokens,
        *split,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Comparison:
    real: RunSummary
    sim: RunSummary
    rtt_ms: float
    load_average: tuple[float, float, float]

    def error_pct(self, name: str) -> float | None:
        """The simulator's relative difference from the real run in %; ``None`` when the
        real run's value is 0 (e.g. no queueing with one client)."""
        real, sim = getattr(self.real, name), getattr(self.sim, name)
        return None if real == 0 else float(100.0 * (sim - real) / real)

    def table(self) -> str:
        rows = [
            ("TPOT (ms)", "tpot_s", 1e3), ("throughput (tok/s)", "throughput_tokens_per_s", 1.0),
            ("AAL (accepted/round)", "aal", 1.0), ("TTFT (ms)", "ttft_s", 1e3),
            ("makespan (s)", "makespan_s", 1.0),
            ("draft ms / round", "draft_ms_per_round", 1.0),
            ("network ms / round", "network_ms_per_round", 1.0),
            ("queue ms / round", "queue_ms_per_round", 1.0),
            ("verify ms / round", "verify_ms_per_round", 1.0),
        ]  # fmt: skip
        out = ["| metric | real (loopback gRPC) | simulator | sim − real |", "|---|---|---|---|"]
        for label, attr, k in rows:
            real, sim = getattr(self.real, attr) * k, getattr(self.sim, attr) * k
            error = self.error_pct(attr)
            shown = "—" if error is None else f"{error:+.1f}%"
            out.append(f"| {label} | {real:.3f} | {sim:.3f} | {shown} |")
        return "\n".join(out)


def compare(real: RealRun, sim_records: Sequence[RequestRecord], rtt_ms: float) -> Comparison:
    if len(sim_records) != len(real.records):
        raise RuntimeError(
            f"the simulator finished {len(sim_records)} of {len(real.records)} requests"
        )
    return Comparison(
        summarize_records(real.records), summarize_records(sim_records), rtt_ms, real.load_average
    )
