"""The run summaries: DSD-Sim's TPOT from round records and :func:`summarise`'s throughput,
TTFT and TPOT per cost mode."""

from __future__ import annotations

from dataclasses import replace

import pytest

from edgespec.core.types import RequestRecord, RoundRecord
from edgespec.metrics import summarize
from edgespec.reproduce.dsd.summary import DsdSimTpot, summarise


def _round(start: float, end: float, down: float, drafted: int, accepted: int, committed: int,
           fused: bool = False) -> RoundRecord:  # fmt: skip
    return RoundRecord("r", 0, start, end, 0.01, 0.02, 0.0, 0.05, down, drafted, accepted,
                       committed, 1, fused=fused)  # fmt: skip


def test_dsdsim_tpot_sums_round_time_over_the_tokens_of_accepting_rounds() -> None:
    sink = DsdSimTpot()
    assert sink.tpot_s is None
    sink.round(_round(0.0, 0.5, 0.05, 4, 3, 4))  # distributed: its downlink counts; 3 tokens
    sink.round(_round(1.0, 1.3, 0.1, 0, 0, 1, fused=True))  # cloud-only: 0.2 s, its 1 token
    sink.round(_round(2.0, 2.4, 0.05, 4, 0, 1))  # nothing accepted: left out
    sink.round(_round(3.0, 3.5, 0.1, 3, 2, 3, fused=True))  # colocated: 0.4 s, 2 tokens
    assert sink.num_tokens == 6
    assert sink.round_time_s == pytest.approx(0.5 + 0.2 + 0.4)
    assert sink.tpot_s == pytest.approx(1.1 / 6)
    only_rejected = DsdSimTpot()
    only_rejected.round(_round(0.0, 0.4, 0.05, 4, 0, 1))
    assert only_rejected.tpot_s is None


def test_summarise_gives_throughput_over_the_horizon_and_the_modes_tpot() -> None:
    """Throughput counts completions over the horizon (compat: the drain's too); TTFT is
    DSD-Sim's (from the draft's start) with the arrival one beside; TPOT is DSD-Sim's when
    given (compat), else the per-request mean, which is kept beside in both modes."""
    waited = RequestRecord("r", "d", "c", 0, 0.0, 1.0, 2.0, 4, 3, 1, 2, 1, device_wait_s=0.6)
    alone = RequestRecord("s", "d", "c", 0, 1.0, 1.2, 2.0, 4, 3, 1, 2, 1)
    metrics = summarize([waited, alone], [], duration_s=8.0, num_servers=1)
    physical = summarise(metrics, 4.0, None)
    assert physical.num_requests == 2
    assert physical.throughput_requests_per_s == pytest.approx(2 / 4.0)  # not over the 8 s
    assert physical.ttft_ms == pytest.approx((0.4 + 0.2) / 2 * 1e3)
    assert physical.ttft_from_arrival_ms == pytest.approx((1.0 + 0.2) / 2 * 1e3)
    assert physical.tpot_ms == physical.request_tpot_ms == pytest.approx((0.5 + 0.4) / 2 * 1e3)
    compat = summarise(metrics, 4.0, 0.031)
    assert compat.tpot_ms == pytest.approx(31.0)
    assert compat.request_tpot_ms == pytest.approx(450.0)
    assert replace(compat, tpot_ms=physical.tpot_ms) == physical
    empty = summarise(summarize([], [], duration_s=8.0, num_servers=1), 4.0, None)
    assert (empty.throughput_requests_per_s, empty.num_requests) == (0.0, 0)
    assert (empty.ttft_ms, empty.tpot_ms, empty.request_tpot_ms) == (None, None, None)
