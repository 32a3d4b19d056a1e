"""summarize / MetricsAccumulator on hand-computed records."""

from __future__ import annotations

import json
import math
import random

import pytest

from edgespec.core.types import BatchRecord, RequestRecord
from edgespec.metrics import MetricsAccumulator, summarize
from edgespec.metrics.exact_sum import ExactSum
from edgespec.metrics.violation_rates import class_violation_rate, violation_rate


def _req(
    rid: str,
    arrival: float,
    first: float,
    finish: float,
    out: int,
    *,
    cls: str = "c8",
    target: float | None = 8.0,
    rounds: int = 2,
    drafted: int = 8,
    accepted: int = 6,
    server: int = 0,
) -> RequestRecord:
    return RequestRecord(
        request_id=rid,
        client_id="d" + rid,
        slo_class=cls,
        server_id=server,
        arrival_s=arrival,
        first_token_s=first,
        finish_s=finish,
        num_prompt_tokens=10,
        num_output_tokens=out,
        num_rounds=rounds,
        num_drafted=drafted,
        num_accepted=accepted,
        slo_tokens_per_s=target,
        draft_s=0.5,
        network_s=0.25,
        queue_s=0.125,
        verify_s=0.125,
    )


REQUESTS = [
    # 8 tokens in 1.0 s -> 8 tok/s, meets 8.
    _req("a", 0.0, 0.25, 1.0, 8),
    # 8 tokens in 2.0 s -> 4 tok/s, misses 8.
    _req("b", 1.0, 1.5, 3.0, 8, drafted=10, accepted=2),
    # class c2: 5 tokens in 2.0 s -> 2.5 tok/s, meets 2.
    _req("c", 2.0, 3.0, 4.0, 5, cls="c2", target=2.0, rounds=1, drafted=4, accepted=4),
    # no SLO class target.
    _req("d", 0.0, 1.0, 1.0, 1, cls="best", target=None, rounds=1, drafted=0, accepted=0),
]
BATCHES = [
    BatchRecord(
        server_id=0, start_s=0.5, end_s=1.0, batch_size=2, num_new_tokens=10, num_cached_tokens=40
    ),
    BatchRecord(
        server_id=0, start_s=1.5, end_s=2.5, batch_size=1, num_new_tokens=5, num_cached_tokens=20
    ),
    BatchRecord(
        server_id=1, start_s=3.5, end_s=4.5, batch_size=2, num_new_tokens=7, num_cached_tokens=0
    ),
]


def test_hand_computed_metrics() -> None:
    m = summarize(REQUESTS, BATCHES, duration_s=4.0, num_servers=2)
    assert m.num_requests == 4
    assert m.num_output_tokens == 22
    assert m.num_prompt_tokens == 40
    # TTFTs: 0.25, 0.5, 1.0, 1.0
    assert m.ttft is not None
    assert m.ttft.mean_s == 0.6875
    assert m.ttft.p50_s == 0.75
    assert m.ttft.max_s == 1.0
    # p90 by linear interpolation over sorted [0.25, 0.5, 1, 1]: rank 2.7 -> 1.0
    assert m.ttft.p90_s == 1.0
    # TPOTs: 0.75/7, 1.5/7, 1.0/4; d's one token has none (a 0 pulled the mean down)
    assert m.tpot is not None
    assert m.tpot.count == 3
    assert m.tpot.mean_s == pytest.approx((0.75 / 7 + 1.5 / 7 + 0.25) / 3, abs=1e-15)
    # E2E: 1, 2, 2, 1
    assert m.e2e is not None
    assert (m.e2e.mean_s, m.e2e.p50_s, m.e2e.p99_s) == (1.5, 1.5, 2.0)
    assert m.throughput_requests_per_s == 1.0
    assert m.goodput_tokens_per_s == 5.5
    assert m.throughput_tokens_per_s == 22 / 4.0
    # SLO: a met, b missed, c met; d has no target.
    assert m.slo_attainment == 2 / 3
    assert m.slo_violation_rate == 1 / 3
    assert [(s.slo_class, s.num_requests, s.num_met, s.attainment) for s in m.slo_classes] == [
        ("best", 1, 0, None),
        ("c2", 1, 1, 1.0),
        ("c8", 2, 1, 0.5),
    ]
    assert m.slo_class("c8").target_tokens_per_s == 8.0
    assert [s.slo_class for s in m.slo_classes_by_target()] == ["c2", "c8", "best"]
    assert violation_rate(m) == 1 / 3
    assert class_violation_rate("c8")(m) == 0.5
    assert class_violation_rate("c2")(m) == 0.0
    # Speculation: drafted 8+10+4+0 = 22, accepted 6+2+4 = 12, rounds 2+2+1+1 = 6.
    assert (m.num_drafted, m.num_accepted, m.num_rounds) == (22, 12, 6)
    assert m.acceptance_rate == 12 / 22
    assert m.aal == 2.0
    assert m.rounds_per_request == 1.5
    assert m.num_wasted_draft_tokens == 10
    # Wasted draft time: 0.5*2/8 + 0.5*8/10 + 0 = 0.125 + 0.4
    assert m.wasted_draft_s == 0.525
    assert m.time_split is not None
    assert m.time_split.mean_queue_s == 0.125
    assert m.time_split.queue_share == 0.125
    assert m.time_split.draft_share == 0.5
    # Batches: server 0 busy 0.5 + 1.0, server 1 busy 0.5 (clipped at duration 4.0).
    assert m.server_busy_s == (1.5, 0.5)
    assert m.server_utilization == (0.375, 0.125)
    assert m.mean_server_utilization == 0.25
    assert m.num_batches == 3
    assert m.mean_batch_size == 5 / 3
    assert [(b.batch_size, b.num_batches) for b in m.batch_sizes] == [(1, 1), (2, 2)]
    assert (m.num_forwarded_tokens, m.num_cached_tokens) == (22, 60)


def test_to_dict_is_json_ready_and_ordered() -> None:
    m = summarize(REQUESTS, BATCHES, duration_s=4.0, num_servers=2)
    d = m.to_dict()
    assert list(d)[:5] == [
        "duration_s",
        "num_servers",
        "num_requests",
        "num_prompt_tokens",
        "num_output_tokens",
    ]
    assert d["ttft"]["p50_s"] == 0.75
    assert d["slo_classes"][0] == {
        "slo_class": "best",
        "target_tokens_per_s": None,
        "num_requests": 1,
        "num_with_target": 0,
        "num_met": 0,
        "attainment": None,
        "num_unfinished_with_target": None,
        "num_unfinished_missed": None,
        "attainment_at_least": None,
        "attainment_at_most": None,
    }
    assert d["batch_sizes"] == [
        {"batch_size": 1, "num_batches": 1},
        {"batch_size": 2, "num_batches": 2},
    ]
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text) == d


def test_empty_run_has_undefined_stats() -> None:
    m = summarize([], [], duration_s=10.0, num_servers=1)
    assert m.ttft is None and m.time_split is None
    assert m.acceptance_rate is None and m.slo_attainment is None
    assert m.server_utilization == (0.0,)
    with pytest.raises(ValueError, match="none of the 0 completed requests has an SLO target"):
        violation_rate(m)
    json.dumps(m.to_dict(), allow_nan=False)


def test_accumulator_matches_summarize_in_any_order() -> None:
    rng = random.Random(7)
    requests = []
    for i in range(300):
        arrival = rng.uniform(0, 100)
        first = arrival + rng.expovariate(3.0)
        finish = first + rng.expovariate(0.2)
        drafted = rng.randint(0, 40)
        requests.append(
            _req(
                f"r{i}",
                arrival,
                first,
                finish,
                rng.randint(1, 200),
                cls=rng.choice(["c2", "c4", "c8"]),
                target=rng.choice([2.0, 4.0, 8.0]),
                rounds=rng.randint(1, 10),
                drafted=drafted,
                accepted=rng.randint(0, drafted),
                server=rng.randint(0, 2),
            )
        )
    batches = []
    for i in range(5000):
        start = rng.uniform(-1, 110)
        batches.append(
            BatchRecord(i % 3, start, start + rng.uniform(0, 0.3), rng.randint(1, 16), 9, 3)
        )
    expected = summarize(requests, batches, duration_s=100.0, num_servers=3)
    rng.shuffle(requests)
    rng.shuffle(batches)
    acc = MetricsAccumulator()
    for r in requests:
        acc.add_request(r)
    for b in batches:
        acc.add_batch(b)
    assert acc.finish(100.0, 3) == expected
    assert json.dumps(acc.finish(100.0, 3).to_dict()) == json.dumps(expected.to_dict())


def test_busy_time_exact_after_folding() -> None:
    # 3000 back-to-back 0.1 s batches: more than the 1024 kept exactly, so most are folded.
    batches = [BatchRecord(0, i * 0.1, (i + 1) * 0.1, 1, 1, 0) for i in range(3000)]
    m = summarize([], batches, duration_s=250.0, num_servers=1)
    import math

    expected = math.fsum(min(b.end_s, 250.0) - b.start_s for b in batches if b.start_s < 250.0)
    assert m.server_busy_s == (expected,)
    assert m.server_utilization[0] == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="server 0: more than 1024 batches end after"):
        summarize([], batches, duration_s=100.0, num_servers=1)


def test_exact_sum_is_order_independent() -> None:
    values = [1e16, 1.0, -1e16, 0.1, 0.2, 0.3] * 10
    a, b = ExactSum(), ExactSum()
    for v in values:
        a.add(v)
    for v in reversed(values):
        b.add(v)
    assert a.value == b.value == pytest.approx(16.0, abs=1e-12)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (_req("x", 2.0, 1.0, 3.0, 4), "request 'x': need arrival_s <= first_token_s <= finish_s"),
        (_req("y", 0.0, 1.0, 3.0, 4, drafted=2, accepted=3), "request 'y': num_accepted=3"),
        # an infinite finish passed the chain: E2E's stats became null beside a count of 1
        (_req("z", 0.0, 1.0, math.inf, 4), "request 'z': need arrival_s <= first_token_s"),
    ],
)
def test_bad_request_records_are_named(record: RequestRecord, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MetricsAccumulator().add_request(record)


def test_bad_batches_and_arguments_are_named() -> None:
    acc = MetricsAccumulator()
    with pytest.raises(ValueError, match="batch on server 1 at 2.0: need finite start_s <= "):
        acc.add_batch(BatchRecord(1, 2.0, 1.0, 1, 1, 0))
    with pytest.raises(ValueError, match="got end_s=3.0, batch_size=0"):
        acc.add_batch(BatchRecord(1, 2.0, 3.0, 0, 1, 0))
    # a NaN end dropped the batch's busy time; negative tokens made throughput negative
    with pytest.raises(ValueError, match="got end_s=nan"):
        acc.add_batch(BatchRecord(1, 2.0, math.nan, 1, 1, 0))
    with pytest.raises(ValueError, match=r"tokens \(new, cached\) \(-5, 0\)"):
        acc.add_batch(BatchRecord(1, 2.0, 3.0, 1, -5, 0))
    acc.add_batch(BatchRecord(3, 0.0, 1.0, 1, 1, 0))
    with pytest.raises(ValueError, match=r"batch on server 3 but num_servers=2 \(server ids"):
        acc.finish(10.0, 2)
    with pytest.raises(ValueError, match="duration_s must be > 0, got 0.0"):
        acc.finish(0.0, 4)


def test_matches_straightforward_reference_computation() -> None:
    rng = random.Random(11)
    requests = []
    for i in range(500):
        arrival = rng.uniform(0, 50)
        first = arrival + rng.uniform(0, 2)
        finish = first + rng.uniform(0, 30)
        drafted = rng.randint(1, 60)
        target = rng.choice([2.0, 4.0, None])
        requests.append(
            _req(f"r{i}", arrival, first, finish, rng.randint(1, 300), target=target,
                 cls=str(target), rounds=rng.randint(1, 20), drafted=drafted,
                 accepted=rng.randint(0, drafted))
        )  # fmt: skip
    batches = []
    for server in range(3):
        t = -0.5
        while t < 62:
            start = t + rng.uniform(0, 0.05)
            t = start + rng.uniform(0.01, 0.2)
            batches.append(BatchRecord(server, start, t, rng.randint(1, 8), 5, 50))
    m = summarize(requests, batches, duration_s=60.0, num_servers=3)

    import numpy as np

    e2e = np.array([r.e2e_s for r in requests])
    assert m.e2e is not None
    assert m.e2e.mean_s == pytest.approx(e2e.mean(), rel=1e-12)
    assert m.e2e.p99_s == pytest.approx(np.quantile(e2e, 0.99), rel=1e-12)
    with_target = [r for r in requests if r.slo_tokens_per_s is not None]
    met = [r for r in with_target if r.num_output_tokens / r.e2e_s >= r.slo_tokens_per_s]  # type: ignore[operator]
    assert m.slo_attainment == len(met) / len(with_target)
    assert m.acceptance_rate == sum(r.num_accepted for r in requests) / sum(
        r.num_drafted for r in requests
    )
    for server in range(3):
        busy = sum(
            max(0.0, min(b.end_s, 60.0) - max(b.start_s, 0.0))
            for b in batches
            if b.server_id == server
        )
        assert m.server_busy_s[server] == pytest.approx(busy, rel=1e-12)
    assert m.mean_batch_size == pytest.approx(
        sum(b.batch_size for b in batches) / len(batches), rel=1e-12
    )
