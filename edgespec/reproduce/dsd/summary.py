"""One DSD run reduced to what the claims read (:class:`DsdRunSummary`): the run job a sweep
executor runs (:class:`DsdRunJob`), DSD-Sim's TPOT streamed from the round records
(:class:`DsdSimTpot`), and one metric of a summary (:func:`summary_metric`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgespec.core.types import RoundRecord
from edgespec.metrics.types import SystemMetrics
from edgespec.reproduce.jobs import scenario_key
from edgespec.sim.simulator import StreamSink


@dataclass(frozen=True, slots=True)
class DsdRunSummary:
    """What the claims read of one run. ``ttft_ms`` is DSD-Sim's TTFT, from when the
    draft device takes the request up (``SystemMetrics.service_ttft``); ``tpot_ms`` the
    cost mode's TPOT: edgespec's per-request mean (physical) or DSD-Sim's, Σ round time /
    Σ accepted tokens over the rounds that accepted something (compat); throughput over
    the horizon (compat: the drain's completions included)."""

    throughput_requests_per_s: float
    ttft_ms: float | None
    tpot_ms: float | None
    num_requests: int
    ttft_from_arrival_ms: float | None = None
    request_tpot_ms: float | None = None
    """edgespec's per-request mean TPOT, in both modes."""


class DsdSimTpot(StreamSink):
    """The metrics, streamed, plus DSD-Sim's TPOT from the round records (src/sim.py: each
    accepted token a sample of its round's time / its accepted tokens): the rounds'
    time and tokens summed over the rounds that accepted something; a round that drafted
    nothing (cloud-only) counts its one token, and a fused round's time leaves out its
    downlink (DSD-Sim's fused rounds send nothing back)."""

    def __init__(self) -> None:
        super().__init__()
        self.round_time_s = 0.0
        self.num_tokens = 0

    def round(self, record: RoundRecord) -> None:
        super().round(record)
        tokens = record.num_accepted if record.num_drafted else record.num_committed
        if tokens > 0:
            down = record.downlink_s if record.fused else 0.0
            self.round_time_s += record.end_s - record.start_s - down
            self.num_tokens += tokens

    @property
    def tpot_s(self) -> float | None:
        return self.round_time_s / self.num_tokens if self.num_tokens else None


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


@dataclass(frozen=True, slots=True)
class DsdRunJob:
    """One run of a scenario dict, reduced to its summary over ``horizon_s`` (module
    level: process pools pickle it)."""

    data: dict[str, Any]
    horizon_s: float
    compat: bool

    def key(self) -> str:
        """What the run's summary depends on (jobs with one key run once)."""
        return f"{scenario_key(self.data)} {self.horizon_s!r} {self.compat}"

    def __call__(self) -> DsdRunSummary:
        from edgespec.sim.setup.scenario import scenario_from_dict
        from edgespec.sim.simulator import paused_gc, simulate

        sink = DsdSimTpot()
        with paused_gc():
            result = simulate(scenario_from_dict(self.data), sink=sink, keep_records=False)
        metrics = sink.acc.finish(result.duration_s, result.num_servers)
        return summarise(metrics, self.horizon_s, sink.tpot_s if self.compat else None)


def summarise(
    metrics: SystemMetrics, horizon_s: float, dsdsim_tpot_s: float | None
) -> DsdRunSummary:
    """A run's summary; ``dsdsim_tpot_s``: DSD-Sim's TPOT (compat), else edgespec's."""
    request_tpot = None if metrics.tpot is None else metrics.tpot.mean_s
    return DsdRunSummary(
        metrics.num_requests / horizon_s,
        None if metrics.service_ttft is None else metrics.service_ttft.mean_s * 1e3,
        _ms(dsdsim_tpot_s if dsdsim_tpot_s is not None else request_tpot),
        metrics.num_requests,
        None if metrics.ttft is None else metrics.ttft.mean_s * 1e3,
        _ms(request_tpot),
    )


def summary_metric(summary: DsdRunSummary | None, metric: str) -> float | None:
    """``thr`` (req/s), ``ttft`` or ``tpot`` (ms) of a run; ``None`` for a missing run."""
    if summary is None:
        return None
    return {
        "thr": summary.throughput_requests_per_s,
        "ttft": summary.ttft_ms,
        "tpot": summary.tpot_ms,
    }[metric]
