"""Streaming aggregation of RequestRecords and BatchRecords into SystemMetrics.

Memory: a few floats per request (for exact percentiles) and O(num_servers + distinct
batch sizes) for batches, so a simulator can feed millions of batches without keeping
them. Every float total is an exactly rounded sum (Shewchuk's algorithm, as in
``math.fsum``), so the result does not depend on the order records arrive in:
``summarize()`` over lists and an accumulator fed online give identical metrics
(:class:`~edgespec.metrics.exact_sum.ExactSum`). Server busy time is kept per server by
:class:`~edgespec.metrics.server_busy.ServerBusyTime`.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from typing import Any

import numpy as np

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.core.unfinished import UnfinishedCount
from edgespec.metrics.exact_sum import ExactSum
from edgespec.metrics.server_busy import ServerBusyTime
from edgespec.metrics.slo_tally import SloTally, attainment_bounds, ratio
from edgespec.metrics.types import (
    BatchSizeCount,
    LatencyStats,
    SystemMetrics,
    TimeSplit,
)

SIM_BUSY_KEEP = 8
"""``busy_keep`` for the simulator's records: its batches arrive in end order and none ends
after the run (a BATCH_END after ``duration_s`` never runs), so a few suffice; at 2,000
servers the default's 1,024 per server would hold about 200 MiB of spans."""


def latency_stats(values: array[float] | list[float]) -> LatencyStats | None:
    """Mean and p50/p90/p99/max of ``values`` (numpy's linear interpolation); None if empty."""
    if len(values) == 0:
        return None
    data = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = np.percentile(data, [50.0, 90.0, 99.0])
    return LatencyStats(
        count=len(values),
        mean_s=math.fsum(values) / len(values),
        p50_s=float(p50),
        p90_s=float(p90),
        p99_s=float(p99),
        max_s=float(data.max()),
    )


class MetricsAccumulator:
    """Feed records with ``add_request`` / ``add_batch`` as they complete; ``finish`` once.

    Records are validated on entry (``ValueError`` naming the request or batch). Optional
    ``add_round``: every round verified inside the run, for the committed goodput.
    ``finish`` does not consume the accumulator: it can be called again after more adds.
    ``busy_keep``: batches per server whose span stays exact for the clipping at
    ``duration_s`` (:class:`~edgespec.metrics.server_busy.ServerBusyTime`); a source that
    adds batches in end order and none ending after the run (the simulator) needs few, and
    memory is per server.
    """

    def __init__(self, busy_keep: int = 1024) -> None:
        if busy_keep < 1:
            raise ValueError(f"busy_keep must be >= 1, got {busy_keep}")
        self._busy_keep = busy_keep
        self._ttft: array[float] = array("d")
        self._service_ttft: array[float] = array("d")
        self._tpot: array[float] = array("d")
        self._e2e: array[float] = array("d")
        self._num_prompt_tokens = 0
        self._num_output_tokens = 0
        self._num_rounds = 0
        self._num_drafted = 0
        self._num_accepted = 0
        self._wasted_draft_s = ExactSum()
        self._split = {name: ExactSum() for name in ("draft", "network", "queue", "verify")}
        self._slo = SloTally()
        self._num_batches = 0
        self._num_forwarded = 0
        self._num_cached = 0
        self._batch_sizes: Counter[int] = Counter()
        self._busy: dict[int, ServerBusyTime] = {}
        self._num_committed: int | None = None  # None: no round counted
        self._num_unfinished: int | None = None  # None: not counted (the source knows not)

    def add_request(self, record: RequestRecord) -> None:
        """Count one completed request."""
        rid = record.request_id
        if not record.arrival_s <= record.first_token_s <= record.finish_s < math.inf:
            raise ValueError(
                f"request {rid!r}: need arrival_s <= first_token_s <= finish_s, got "
                f"{record.arrival_s}, {record.first_token_s}, {record.finish_s}"
            )
        if not 0 <= record.num_accepted <= record.num_drafted:
            raise ValueError(
                f"request {rid!r}: num_accepted={record.num_accepted} outside "
                f"0..num_drafted={record.num_drafted}"
            )
        for name in ("num_prompt_tokens", "num_output_tokens", "num_rounds"):
            if getattr(record, name) < 0:
                raise ValueError(f"request {rid!r}: {name} must be >= 0")
        self._ttft.append(record.ttft_s)
        self._service_ttft.append(record.service_ttft_s)
        if record.num_output_tokens > 1:  # one token has no time per output token
            self._tpot.append(record.tpot_s)
        self._e2e.append(record.e2e_s)
        self._num_prompt_tokens += record.num_prompt_tokens
        self._num_output_tokens += record.num_output_tokens
        self._num_rounds += record.num_rounds
        self._num_drafted += record.num_drafted
        self._num_accepted += record.num_accepted
        if record.num_drafted > 0:
            wasted = record.num_drafted - record.num_accepted
            self._wasted_draft_s.add(record.draft_s * wasted / record.num_drafted)
        self._split["draft"].add(record.draft_s)
        self._split["network"].add(record.network_s)
        self._split["queue"].add(record.queue_s)
        self._split["verify"].add(record.verify_s)
        self._slo.add(record.slo_class, record.slo_tokens_per_s, bool(record.slo_met))

    def add_batch(self, record: BatchRecord) -> None:
        """Count one verification forward pass."""
        start, end, size, server = record.start_s, record.end_s, record.batch_size, record.server_id
        tokens = (record.num_new_tokens, record.num_cached_tokens)  # a NaN's busy time was lost
        if not -math.inf < start <= end < math.inf or size < 1 or server < 0 or min(tokens) < 0:
            raise ValueError(
                f"batch on server {server} at {start}: need finite start_s <= end_s, "
                f"batch_size >= 1, server_id >= 0 and token counts >= 0; got end_s={end}, "
                f"batch_size={size}, tokens (new, cached) {tokens}"
            )
        self._num_batches += 1
        self._num_forwarded += record.num_new_tokens
        self._num_cached += record.num_cached_tokens
        self._batch_sizes[size] += 1
        busy = self._busy.get(server)
        if busy is None:
            busy = self._busy[server] = ServerBusyTime(self._busy_keep)
        busy.add(start, end)

    def add_round(self, record: RoundRecord) -> None:
        """Count one round's committed tokens (its request may be unfinished). The
        simulator emits a round when its verification ends, never after ``duration_s``."""
        if record.num_committed < 0:
            rid, index, n = record.request_id, record.round_index, record.num_committed
            raise ValueError(
                f"round {index} of request {rid!r}: num_committed must be >= 0, got {n}"
            )
        self._num_committed = (self._num_committed or 0) + record.num_committed

    def add_committed(self, num_tokens: int) -> None:
        """Count ``num_tokens`` committed by rounds not given one by one
        (:meth:`add_round`): the simulator's count over a run without round records."""
        if num_tokens < 0:
            raise ValueError(f"committed tokens must be >= 0, got {num_tokens}")
        self._num_committed = (self._num_committed or 0) + num_tokens

    def add_unfinished(self, count: UnfinishedCount) -> None:
        """Count requests that arrived inside the run and had not finished at its end (the
        simulator's devices' requests running or waiting then), by SLO class."""
        self._num_unfinished = (self._num_unfinished or 0) + count.num_requests
        for unfinished in count.classes:
            self._slo.add_unfinished(unfinished)

    def merge(self, other: MetricsAccumulator) -> None:
        """Add every record ``other`` counted (a shard of the same run): the result is
        what one accumulator fed all the records gives (sums are exact, percentiles
        are of the same values)."""
        self._ttft.extend(other._ttft)
        self._service_ttft.extend(other._service_ttft)
        self._tpot.extend(other._tpot)
        self._e2e.extend(other._e2e)
        self._num_prompt_tokens += other._num_prompt_tokens
        self._num_output_tokens += other._num_output_tokens
        self._num_rounds += other._num_rounds
        self._num_drafted += other._num_drafted
        self._num_accepted += other._num_accepted
        self._wasted_draft_s.merge(other._wasted_draft_s)
        for name, total in other._split.items():
            self._split[name].merge(total)
        self._slo.merge(other._slo)
        self._num_batches += other._num_batches
        self._num_forwarded += other._num_forwarded
        self._num_cached += other._num_cached
        self._batch_sizes.update(other._batch_sizes)
        if other._num_committed is not None:
            self._num_committed = (self._num_committed or 0) + other._num_committed
        if other._num_unfinished is not None:  # its classes' came with other._slo
            self._num_unfinished = (self._num_unfinished or 0) + other._num_unfinished
        for server, busy in other._busy.items():
            mine_busy = self._busy.get(server)
            if mine_busy is None:
                mine_busy = self._busy[server] = ServerBusyTime(self._busy_keep)
            mine_busy.merge(busy)

    def finish(self, duration_s: float, num_servers: int) -> SystemMetrics:
        """Metrics over a run of ``duration_s`` seconds on ``num_servers`` target servers."""
        busy = self._server_busy(duration_s, num_servers)
        num_requests = len(self._e2e)
        utilization = tuple(b / duration_s for b in busy)
        with_target, met = self._slo.num_with_target, self._slo.num_met
        attainment = ratio(met, with_target)
        batch_token_sum = sum(size * n for size, n in self._batch_sizes.items())
        return SystemMetrics(
            duration_s=duration_s,
            num_servers=num_servers,
            num_requests=num_requests,
            num_prompt_tokens=self._num_prompt_tokens,
            num_output_tokens=self._num_output_tokens,
            ttft=latency_stats(self._ttft),
            service_ttft=latency_stats(self._service_ttft),
            tpot=latency_stats(self._tpot),
            e2e=latency_stats(self._e2e),
            throughput_requests_per_s=num_requests / duration_s,
            throughput_tokens_per_s=self._num_forwarded / duration_s,
            goodput_tokens_per_s=self._num_output_tokens / duration_s,
            slo_attainment=attainment,
            slo_violation_rate=None if attainment is None else (with_target - met) / with_target,
            slo_classes=self._slo.stats(unfinished_counted=self._num_unfinished is not None),
            num_rounds=self._num_rounds,
            num_drafted=self._num_drafted,
            num_accepted=self._num_accepted,
            acceptance_rate=ratio(self._num_accepted, self._num_drafted),
            aal=ratio(self._num_accepted, self._num_rounds),
            rounds_per_request=ratio(self._num_rounds, num_requests),
            num_wasted_draft_tokens=self._num_drafted - self._num_accepted,
            wasted_draft_s=self._wasted_draft_s.value,
            time_split=self._time_split(num_requests),
            num_batches=self._num_batches,
            num_forwarded_tokens=self._num_forwarded,
            num_cached_tokens=self._num_cached,
            mean_batch_size=ratio(batch_token_sum, self._num_batches),
            batch_sizes=tuple(
                BatchSizeCount(size, self._batch_sizes[size]) for size in sorted(self._batch_sizes)
            ),
            server_busy_s=busy,
            server_utilization=utilization,
            mean_server_utilization=math.fsum(utilization) / num_servers,
            num_committed_tokens=self._num_committed,
            committed_goodput_tokens_per_s=None
            if self._num_committed is None
            else self._num_committed / duration_s,
            **self._unfinished_fields(),
        )

    def _unfinished_fields(self) -> dict[str, Any]:
        """The unfinished requests' counts and the SLO attainment over every request that
        arrived, between its two bounds: every unfinished request with a target a miss, or
        every one not already sure to miss a hit (``None`` when not counted, or none had a
        target)."""
        if self._num_unfinished is None:
            return {}
        slo = self._slo
        with_target, missed = slo.num_unfinished_with_target, slo.num_unfinished_missed
        least, most = attainment_bounds(slo.num_met, slo.num_with_target, with_target, missed)
        return {
            "num_unfinished_requests": self._num_unfinished,
            "num_unfinished_with_target": with_target,
            "num_unfinished_missed": missed,
            "slo_attainment_at_least": least,
            "slo_attainment_at_most": most,
        }

    def _server_busy(self, duration_s: float, num_servers: int) -> tuple[float, ...]:
        """Each server's busy seconds within the run; a bad duration, server count or a
        batch on a server beyond it is a ValueError."""
        if not duration_s > 0:
            raise ValueError(f"duration_s must be > 0, got {duration_s}")
        if num_servers < 1:
            raise ValueError(f"num_servers must be >= 1, got {num_servers}")
        unknown = sorted(s for s in self._busy if s >= num_servers)
        if unknown:
            raise ValueError(
                f"batch on server {unknown[0]} but num_servers={num_servers} "
                f"(server ids are 0..{num_servers - 1})"
            )
        return tuple(
            self._busy[s].total(s, duration_s) if s in self._busy else 0.0
            for s in range(num_servers)
        )

    def _time_split(self, num_requests: int) -> TimeSplit | None:
        if num_requests == 0:
            return None
        totals = {name: s.value for name, s in self._split.items()}
        whole = math.fsum(totals.values())
        return TimeSplit(
            mean_draft_s=totals["draft"] / num_requests,
            mean_network_s=totals["network"] / num_requests,
            mean_queue_s=totals["queue"] / num_requests,
            mean_verify_s=totals["verify"] / num_requests,
            draft_share=ratio(totals["draft"], whole),
            network_share=ratio(totals["network"], whole),
            queue_share=ratio(totals["queue"], whole),
            verify_share=ratio(totals["verify"], whole),
        )
