"""summarize / MetricsAccumulator edge cases on tiny hand-computed records: one request,
zero-length spans, every time-split field, forwarded vs committed tokens, idle servers,
record validation and merging a shard with mixed class targets (docs/METRICS.md)."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.types import BatchRecord, RequestRecord
from edgespec.metrics import MetricsAccumulator, summarize
from edgespec.metrics.types import LatencyStats, TimeSplit
from edgespec.metrics.violation_rates import class_violation_rate


def _req(
    rid: str = "x",
    arrival: float = 1.0,
    first: float = 1.5,
    finish: float = 3.5,
    out: int = 5,
    *,
    cls: str = "c",
    target: float | None = None,
) -> RequestRecord:
    return RequestRecord(
        request_id=rid,
        client_id="d" + rid,
        slo_class=cls,
        server_id=0,
        arrival_s=arrival,
        first_token_s=first,
        finish_s=finish,
        num_prompt_tokens=3,
        num_output_tokens=out,
        num_rounds=2,
        num_drafted=4,
        num_accepted=2,
        slo_tokens_per_s=target,
    )


def test_one_request_run_has_defined_latency_stats() -> None:
    # TTFT 1.5 - 1.0; TPOT (3.5 - 1.5) / (5 - 1); E2E 3.5 - 1.0
    m = summarize([_req()], [], duration_s=4.0, num_servers=1)
    assert m.ttft == LatencyStats(1, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert m.service_ttft == LatencyStats(1, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert m.tpot == LatencyStats(1, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert m.e2e == LatencyStats(1, 2.5, 2.5, 2.5, 2.5, 2.5)


def test_one_token_requests_have_no_tpot() -> None:
    # a one-token output has no time between tokens: left out of TPOT, not counted as 0
    one = dataclasses.replace(_req(), request_id="one", num_output_tokens=1)
    assert summarize([one], [], duration_s=4.0, num_servers=1).tpot is None
    m = summarize([_req(), one], [], duration_s=4.0, num_servers=1)
    assert m.tpot == LatencyStats(1, 0.5, 0.5, 0.5, 0.5, 0.5)


def test_zero_ttft_and_zero_counts_are_valid() -> None:
    record = dataclasses.replace(
        _req(arrival=2.0, first=2.0, finish=4.0),
        num_prompt_tokens=0,
        num_rounds=0,
        num_drafted=0,
        num_accepted=0,
    )
    m = summarize([record], [], duration_s=4.0, num_servers=1)
    assert m.ttft is not None and (m.ttft.mean_s, m.ttft.max_s) == (0.0, 0.0)
    assert (m.num_prompt_tokens, m.num_rounds, m.rounds_per_request) == (0, 0, 0.0)
    assert m.aal is None and m.acceptance_rate is None


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            dataclasses.replace(_req(), num_accepted=-1),
            "request 'x': num_accepted=-1 outside 0..num_drafted=4",
        ),
        (
            dataclasses.replace(_req(), num_prompt_tokens=-1),
            "request 'x': num_prompt_tokens must be >= 0",
        ),
        (
            dataclasses.replace(_req(), num_output_tokens=-1),
            "request 'x': num_output_tokens must be >= 0",
        ),
        (dataclasses.replace(_req(), num_rounds=-1), "request 'x': num_rounds must be >= 0"),
    ],
)
def test_negative_counts_are_named(record: RequestRecord, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MetricsAccumulator().add_request(record)


def test_time_split_means_and_shares_per_component() -> None:
    # totals: draft 4, network 2, queue 1.5, verify 0.5 (sum 8), over 2 requests
    a = dataclasses.replace(_req("a"), draft_s=1.0, network_s=0.5, queue_s=0.5, verify_s=0.25)
    b = dataclasses.replace(_req("b"), draft_s=3.0, network_s=1.5, queue_s=1.0, verify_s=0.25)
    m = summarize([a, b], [], duration_s=4.0, num_servers=1)
    assert m.time_split == TimeSplit(
        mean_draft_s=2.0,
        mean_network_s=1.0,
        mean_queue_s=0.75,
        mean_verify_s=0.25,
        draft_share=0.5,
        network_share=0.25,
        queue_share=0.1875,
        verify_share=0.0625,
    )


def test_throughput_counts_forwarded_tokens_and_idle_servers_count_as_zero() -> None:
    # 5 committed tokens; 10 + 6 forwarded, all on server 0 (busy 0.5 + 0.5) of 4.
    batches = [BatchRecord(0, 0.0, 0.5, 2, 10, 0), BatchRecord(0, 1.0, 1.5, 1, 6, 4)]
    m = summarize([_req()], batches, duration_s=2.0, num_servers=4)
    assert m.throughput_tokens_per_s == 8.0
    assert m.goodput_tokens_per_s == 2.5
    assert m.server_utilization == (0.5, 0.0, 0.0, 0.0)
    assert m.mean_server_utilization == 0.125


def test_zero_length_batch_is_valid_and_not_busy() -> None:
    m = summarize([], [BatchRecord(0, 1.0, 1.0, 1, 3, 0)], duration_s=2.0, num_servers=1)
    assert (m.num_batches, m.num_forwarded_tokens, m.server_busy_s) == (1, 3, (0.0,))


def test_bad_server_ids_and_server_counts_are_named() -> None:
    acc = MetricsAccumulator()
    with pytest.raises(ValueError, match=r"batch on server -1 at 0.0: .* token counts >= 0; got"):
        acc.add_batch(BatchRecord(-1, 0.0, 1.0, 1, 1, 0))
    with pytest.raises(ValueError, match="num_servers must be >= 1, got 0"):
        acc.finish(1.0, 0)
    acc.add_batch(BatchRecord(5, 0.0, 1.0, 1, 1, 0))
    acc.add_batch(BatchRecord(2, 0.0, 1.0, 1, 1, 0))
    # server id 2 is one past the last of 2 servers; the lowest unknown id is named
    with pytest.raises(ValueError, match=r"^batch on server 2 but num_servers=2 \(server ids"):
        acc.finish(1.0, 2)
    assert acc.finish(1.0, 6).server_busy_s == (0.0, 0.0, 1.0, 0.0, 0.0, 1.0)


def test_merging_a_shard_with_mixed_targets_keeps_the_class_target_undefined() -> None:
    # 4 tokens in 1 s: 4 tok/s, so the target-4 request meets, the target-8 ones miss
    records = [
        _req("a", 0.0, 0.5, 1.0, 4, target=8.0),
        _req("b", 0.0, 0.5, 1.0, 4, target=4.0),
        _req("c", 0.0, 0.5, 1.0, 4, target=8.0),
    ]
    whole, first, rest = MetricsAccumulator(), MetricsAccumulator(), MetricsAccumulator()
    for r in records:
        whole.add_request(r)
    first.add_request(records[0])
    for r in records[1:]:
        rest.add_request(r)
    first.merge(rest)
    merged = first.finish(2.0, 1)
    assert merged == whole.finish(2.0, 1)
    stats = merged.slo_class("c")
    assert (stats.target_tokens_per_s, stats.num_with_target, stats.num_met) == (None, 3, 1)


def test_class_violation_rate_undefined_without_targets() -> None:
    m = summarize([_req(cls="best")], [], duration_s=4.0, num_servers=1)
    with pytest.raises(
        ValueError,
        match="SLO violation rate undefined for class 'best': none of its 1 requests has a target",
    ):
        class_violation_rate("best")(m)
