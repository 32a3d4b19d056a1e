"""Exact numbers from the emulated link's edge cases (payload and hidden bytes, a failing
call, a fused run that falls behind or breaks, the flags), the service's own counters and
the Prometheus families they become."""

from __future__ import annotations

import argparse
import itertools
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from edgespec.core.link_delay import HEADER_BYTES
from edgespec.core.types import PendingVerification, SamplingParams, VerifyResult
from edgespec.errors import UserInputError
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.runtime.commands.link_arguments import add_link_arguments, link_overrides
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    ServerStats,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
    VerifyReply,
)
from edgespec.runtime.server.counters import ServiceCounters
from edgespec.runtime.server.engine_counters import EngineCounters
from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation, LinkTransfer

# 8 Mbit/s = 1e6 bytes/s and no RTT: a message of n bytes is delayed exactly n µs
BYTE_LINK = LinkEmulation(bandwidth_mbps=8.0)


def _reply(committed: tuple[int, ...], hidden_rows: int = 0) -> VerifyReply:
    result = VerifyResult(2, 1, 1, committed[-1], committed[:1])
    hidden = np.zeros((hidden_rows, 3), np.float32) if hidden_rows else None
    return VerifyReply(VerifyOutcome(result, committed, False, 2, hidden, 5), 0.0, 0.0, 1)


class Inner:
    """Answers every verification with ``reply``, or raises ``error``; ``rounds`` is a
    fused run's stream, raising ``error`` after it when set."""

    def __init__(self, reply: VerifyReply, error: RequestError | None = None) -> None:
        self.reply = reply
        self.error = error
        self.rounds: list[FusedRound] = []

    def open(self, spec: SessionSpec) -> None: ...

    def verify(self, call: VerifyCall) -> VerifyReply:
        if self.error is not None:
            raise self.error
        return self.reply

    def close(self, session_id: str) -> None: ...

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        yield from self.rounds
        if self.error is not None:
            raise self.error


class NoFused:
    def open(self, spec: SessionSpec) -> None: ...

    def verify(self, call: VerifyCall) -> VerifyReply:
        raise AssertionError("not called")

    def close(self, session_id: str) -> None: ...


def _linked(inner: object, clock: object = None) -> tuple[EmulatedLinkVerifier, list[float]]:
    slept: list[float] = []
    kwargs = {} if clock is None else {"clock": clock}
    verifier = EmulatedLinkVerifier(
        inner,  # type: ignore[arg-type]
        BYTE_LINK,
        np.random.default_rng(0),
        slept.append,
        **kwargs,  # type: ignore[arg-type]
    )
    return verifier, slept


def test_payload_and_hidden_values_are_counted_as_fp16_bytes() -> None:
    verifier, slept = _linked(Inner(_reply((1, 9), hidden_rows=2)))
    payloads = {"h": np.zeros((2, 5), np.float32), "g": np.zeros(3, np.float32)}
    verifier.verify(VerifyCall("s", 5, (1, 2), payloads=payloads))
    # up: 64 + 4 × 2 ids + 2 × 13 values = 98; down: 64 + 4 × 3 + 2 × 6 hidden values = 88
    assert verifier.transfers == (LinkTransfer("verify", 98, 98e-6, 88, 88e-6),)
    assert slept == pytest.approx([98e-6, 88e-6], abs=1e-15)


def test_open_pays_the_prompt_up_and_a_header_down() -> None:
    verifier, slept = _linked(Inner(_reply((1,))))
    verifier.open(SessionSpec("s", "c", tuple(range(10)), SamplingParams()))
    assert verifier.transfers == (LinkTransfer("open", 104, 104e-6, HEADER_BYTES, 64e-6),)
    assert slept == pytest.approx([104e-6, 64e-6], abs=1e-15)


def test_a_failing_call_pays_only_its_request() -> None:
    error = RequestError(ErrorCode.NOT_FOUND, "unknown session 's'")
    verifier, slept = _linked(Inner(_reply((1,)), error))
    with pytest.raises(RequestError, match="unknown session"):
        verifier.verify(VerifyCall("s", 5, (1, 2, 3)))
    assert verifier.transfers == (LinkTransfer("verify", 76, 76e-6),)
    assert slept == pytest.approx([76e-6], abs=1e-15)
    assert verifier.total_delay_s == pytest.approx(76e-6, abs=1e-15)


def _fused_round(committed: tuple[int, ...]) -> FusedRound:
    return FusedRound(2, (1, 2), 0.0, _reply(committed))


def test_fused_rounds_that_arrive_late_are_not_slept_for() -> None:
    """A clock that jumps a second per reading: every round is read long after its
    downlink delay would have delivered it, so only the request's uplink is slept."""
    lock = threading.Lock()
    ticks = itertools.count()

    def clock() -> float:
        with lock:
            return float(next(ticks))

    inner = Inner(_reply((1,)))
    inner.rounds = [_fused_round((1, 9)), _fused_round((4,))]
    verifier, slept = _linked(inner, clock)
    got = list(verifier.run_fused(FusedCall("s", 5, 2, HistorySnapshot())))
    assert got == inner.rounds
    assert slept == pytest.approx([64e-6], abs=1e-15)
    assert verifier.transfers == (
        LinkTransfer("fused", HEADER_BYTES, 64e-6, 76, 76e-6),
        LinkTransfer("fused", 0, 0.0, 72, 72e-6),
    )


def test_a_fused_run_on_a_link_without_delay_never_sleeps() -> None:
    inner = Inner(_reply((1,)))
    inner.rounds = [_fused_round((1, 9)), _fused_round((4,))]
    slept: list[float] = []
    verifier = EmulatedLinkVerifier(
        inner, LinkEmulation(), np.random.default_rng(0), slept.append, lambda: 0.0
    )
    assert list(verifier.run_fused(FusedCall("s", 5, 2, HistorySnapshot()))) == inner.rounds
    assert slept == []
    assert [t.downlink_bytes for t in verifier.transfers] == [76, 72]


def test_a_fused_stream_error_reaches_the_caller_after_the_rounds_before_it() -> None:
    inner = Inner(_reply((1,)), RequestError(ErrorCode.INTERNAL, "draft failed"))
    inner.rounds = [_fused_round((1, 9))]
    verifier, _ = _linked(inner, lambda: 0.0)
    got: list[FusedRound] = []
    with pytest.raises(RequestError) as info:
        for fused_round in verifier.run_fused(FusedCall("s", 5, 2, HistorySnapshot())):
            got.append(fused_round)
    assert (info.value.code, info.value.message) == (ErrorCode.INTERNAL, "draft failed")
    assert got == inner.rounds
    assert len(verifier.transfers) == 1


def test_a_verifier_without_fused_runs_is_refused_before_any_delay() -> None:
    verifier, slept = _linked(NoFused())
    with pytest.raises(RequestError) as info:
        list(verifier.run_fused(FusedCall("s", 5, 2, HistorySnapshot())))
    assert (info.value.code, info.value.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "verifier NoFused cannot run fused rounds",
    )
    assert (slept, verifier.transfers) == ([], ())


def _flags(*argv: str) -> list[str]:
    parser = argparse.ArgumentParser()
    add_link_arguments(parser)
    return link_overrides(parser.parse_args(list(argv)))


def test_link_flags_become_config_overrides() -> None:
    assert _flags() == []
    assert _flags("--link-bandwidth-mbps", "0", "--link-seed", "7", "--link-rtt-ms", "0") == [
        "link_rtt_ms=0.0",
        "link_bandwidth_mbps=0.0",
        "link_seed=7",
    ]
    with pytest.raises(UserInputError, match="--link-jitter-ms must be a finite number >= 0"):
        _flags("--link-jitter-ms", "-0.5")
    with pytest.raises(UserInputError) as info:  # was a config-field error after parsing
        _flags("--link-rtt-ms", "1e308")
    assert str(info.value) == "--link-rtt-ms must be at most 60,000 ms, got 1e+308"


def _entry(entry_id: int, new: int, cached: int) -> PendingVerification:
    return PendingVerification(entry_id, f"s{entry_id}", "c", 0.0, 2, new, cached)


ENGINE = EngineCounters(
    num_forward_passes=9,
    num_tokens_forwarded=40,
    num_verifications=12,
    num_cache_hits=3,
    num_cache_misses=1,
    num_reprefills=2,
    num_evictions=5,
    num_cached_tokens=30,
    num_cached_bytes=3000,
    num_sessions=4,
    num_prefill_parts=11,
)


def test_service_counters_make_exact_stats() -> None:
    counters = ServiceCounters(num_expired=2, num_rejected=7, busy=True)
    assert counters.stats(ENGINE, 0).mean_batch_size == 0.0
    counters.record_batch([_entry(1, 3, 10), _entry(2, 4, 20), _entry(3, 1, 0)], 1.0, 1.5)
    for start in (2.0, 3.0):
        counters.record_batch([_entry(4, 2, 5)], start, start + 0.25)
    record = counters.batches[0]
    assert (record.batch_size, record.num_new_tokens, record.num_cached_tokens) == (3, 8, 30)
    assert (record.server_id, record.start_s, record.end_s) == (0, 1.0, 1.5)
    assert counters.stats(ENGINE, 6) == ServerStats(
        queue_depth=6,
        num_sessions=4,
        num_batches=3,
        mean_batch_size=5 / 3,
        max_batch_size=3,
        batch_size_histogram=((1, 2), (3, 1)),
        num_tokens_forwarded=40,
        num_cache_hits=3,
        num_cache_misses=1,
        cache_hit_ratio=0.75,
        num_evictions=5,
        num_reprefills=2,
        num_cached_tokens=30,
        num_cached_bytes=3000,
        num_expired_sessions=2,
        num_rejected=7,
        busy=True,
    )


def test_only_the_last_10000_batches_are_kept_but_every_size_is_counted() -> None:
    counters = ServiceCounters()
    for i in range(10_002):
        counters.record_batch([_entry(i, 1, 0)], float(i), float(i) + 0.5)
    assert len(counters.batches) == 10_000
    assert counters.batches[0].start_s == 2.0
    assert counters.batch_sizes == {1: 10_002}


def test_prometheus_listens_on_loopback_by_default() -> None:
    pytest.importorskip("prometheus_client")
    from edgespec.runtime.server.prometheus import start_prometheus

    metrics = ServiceCounters().metrics(ENGINE, 0)
    server = start_prometheus(0, lambda: metrics)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
        server.server_close()
