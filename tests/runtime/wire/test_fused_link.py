"""The emulated link delays fused runs: the request's uplink once, each streamed round's
downlink from its arrival, in order (exact with a stand-still clock), and a loopback run
at 30 ms RTT that switches to fused and stays lossless."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from edgespec.core.link_delay import HEADER_BYTES, downlink_bytes
from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    FusedRunEnd,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
    VerifyReply,
)
from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation, LinkTransfer
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory
from tests.runtime.fused_helpers import ScriptedWindow


def _round(committed: tuple[int, ...], last: bool) -> FusedRound:
    accepted = len(committed) - 1
    rejection = None if accepted == 3 else accepted
    result = VerifyResult(3, accepted, rejection, committed[-1], committed[:-1])
    reply = VerifyReply(VerifyOutcome(result, committed, last, 3), 0.0, 0.0, 1)
    end = FusedRunEnd(None, HistorySnapshot()) if last else None
    return FusedRound(3, (1, 2, 3), 0.0, reply, end)


ROUNDS = (_round((1, 2), False), _round((4,), False), _round((1, 2, 3, 9), True))


class _FusedStub:
    def open(self, spec: SessionSpec) -> None: ...

    def verify(self, call: VerifyCall) -> VerifyReply:
        raise AssertionError("not called")

    def close(self, session_id: str) -> None: ...

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        yield from ROUNDS


def test_fused_delays_are_exact_and_in_order() -> None:
    """The clock stands still at 0, so every round reached the device at 0 and is
    delivered at max(its downlink delay, the previous round's delivery): the sleeps are
    exact whatever the reader thread's timing."""
    link = LinkEmulation(rtt_ms=20.0, jitter_ms=8.0)
    slept: list[float] = []
    verifier = EmulatedLinkVerifier(
        _FusedStub(), link, np.random.default_rng(7), slept.append, clock=lambda: 0.0
    )
    got = list(verifier.run_fused(FusedCall("s", 5, 3, HistorySnapshot())))
    assert got == list(ROUNDS)
    draws = np.random.default_rng(7)  # the same draws, in the same order
    up = link.delay_s(HEADER_BYTES, draws)
    sizes = [downlink_bytes(len(r.reply.outcome.committed_token_ids)) for r in ROUNDS]
    downs = [link.delay_s(size, draws) for size in sizes]
    assert sizes == [76, 72, 84]
    assert slept == [up, downs[0], max(downs[:2]), max(downs)]
    assert verifier.transfers == (
        LinkTransfer("fused", HEADER_BYTES, up, sizes[0], downs[0]),
        LinkTransfer("fused", 0, 0.0, sizes[1], downs[1]),
        LinkTransfer("fused", 0, 0.0, sizes[2], downs[2]),
    )


def test_a_fused_run_behind_a_30ms_link_is_lossless_and_pays_the_link(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    server = make_server(window=StaticWindow(4, fused=True))  # fused to the end once fused
    link = LinkEmulation(rtt_ms=30.0)
    verifier = EmulatedLinkVerifier(
        RemoteVerifier(f"127.0.0.1:{server.port}"), link, np.random.default_rng(0)
    )
    prompt = (5, 6, 7, 8, 9)
    result = generate(
        verifier,
        TransformersDraft(draft_model),
        prompt,
        SamplingParams(max_new_tokens=24),
        DraftOptions(session_id="linked"),
        ScriptedWindow((False, True)),
    )
    assert result.output_token_ids == target_greedy_decode(target, prompt, 24)
    rounds = result.rounds
    assert [r.fused for r in rounds] == [False] + [True] * (len(rounds) - 1)
    assert len(rounds) >= 3
    # the distributed round and the fused run's first round crossed both directions
    for r in rounds[:2]:
        assert r.uplink_s + r.downlink_s >= 0.030
    assert [t.method for t in verifier.transfers] == ["open", "verify"] + ["fused"] * (
        len(rounds) - 1
    )
    fused = verifier.transfers[2:]
    assert (fused[0].uplink_bytes, fused[0].uplink_s) == (HEADER_BYTES, 0.015)
    assert all(t.downlink_s == 0.015 for t in fused)
    assert all((t.uplink_bytes, t.uplink_s) == (0, 0.0) for t in fused[1:])
