"""Per-round fused/distributed switching over loopback gRPC: lossless output, the exact
decision sequence and fused rounds, and the drafter's round timestamps around a switch."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowObservation
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.messages import FusedCall, FusedRound, SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory
from tests.runtime.fused_helpers import DISTRIBUTED_GAMMA, FUSED_GAMMA, ScriptedWindow, gamma_at

PROMPTS = [tuple((5 * i + 3 * j) % 64 for j in range(4 + 3 * i)) for i in range(4)]
MAX_NEW = 20
_ids = itertools.count()


def _check_decisions(
    result: GenerationResult, policy: ScriptedWindow, server_decides: bool = True
) -> None:
    """One consultation per round; round i ran fused exactly when the script said so;
    the consultation after a fused round ran on the server (``server_decides``), every
    other on the device; each observation shows the previous round's decision and mode,
    and the last distributed round's network time (fused rounds leave it unchanged)."""
    rounds = result.rounds
    assert len(policy.seen) == len(rounds)
    assert [r.fused for r in rounds] == [policy.fused_at(i) for i in range(len(rounds))]
    expected_device = [
        i == 0 or not (server_decides and rounds[i - 1].fused) for i in range(len(rounds))
    ]
    assert policy.on_device == expected_device
    # the draft–target pair: the drafter and the server both name it by the client id
    client_id = result.request.client_id
    assert policy.seen[0] == WindowObservation(0, None, pair=client_id)
    assert [o.pair for o in policy.seen] == [client_id] * len(rounds)
    rtt_s = 0.0
    for i, obs in enumerate(policy.seen[1:], start=1):
        before = rounds[i - 1]
        if not before.fused:
            rtt_s = before.uplink_s + before.downlink_s
        assert (obs.previous_gamma, obs.previous_fused) == (gamma_at(policy, i - 1), before.fused)
        assert obs.last_num_accepted == before.num_accepted
        assert obs.rtt_s == rtt_s
    for i, r in enumerate(rounds):
        assert r.num_drafted <= gamma_at(policy, i)


def test_switching_is_lossless_with_the_exact_decisions(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    """Hypothesis draws the fused/distributed pattern; one scripted policy object is the
    device's and the server's, so it is consulted once per round wherever the round runs."""
    policy = ScriptedWindow()
    server = make_server(window=policy)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    references = {p: target_greedy_decode(target, p, MAX_NEW) for p in PROMPTS}

    @settings(max_examples=8, deadline=None, derandomize=True)
    @given(script=st.lists(st.booleans(), min_size=1, max_size=12), prompt=st.sampled_from(PROMPTS))
    def check(script: list[bool], prompt: tuple[int, ...]) -> None:
        policy.reset(script)
        result = generate(
            verifier,
            TransformersDraft(draft_model),
            prompt,
            SamplingParams(max_new_tokens=MAX_NEW),
            DraftOptions(session_id=f"switch-{next(_ids)}"),
            policy,
        )
        assert result.output_token_ids == references[prompt]
        _check_decisions(result, policy)
        assert result.request.num_rounds == len(result.rounds)

    check()
    # every fused round was verified by the server's queue and drafted by its draft
    assert verifier.stats().num_sessions == 0


def test_a_script_with_fused_runs_of_several_rounds(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    """D F F F D F D ...: a fused run of three rounds and one of one, each handed back."""
    script = (False, True, True, True, False, True, False)
    policy = ScriptedWindow(script)
    server = make_server(window=policy)
    streamed: list[int] = []
    result = generate(
        RemoteVerifier(f"127.0.0.1:{server.port}"),
        TransformersDraft(draft_model),
        PROMPTS[1],
        SamplingParams(max_new_tokens=40),
        DraftOptions(session_id="runs"),
        policy,
        on_tokens=streamed.extend,
    )
    assert result.output_token_ids == target_greedy_decode(target, PROMPTS[1], 40)
    assert tuple(streamed) == result.output_token_ids
    assert len(result.rounds) > len(script)
    assert [r.fused for r in result.rounds[:7]] == list(script)
    _check_decisions(result, policy)


class _FakeClock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


UP_S, DOWN_S, QUEUE_S, VERIFY_S, SERVER_DRAFT_S = 0.25, 0.25, 0.125, 0.5, 0.0625


class _TimedVerifier:
    """A RemoteVerifier on a fake clock: each verify takes UP_S, then the server's
    QUEUE_S + VERIFY_S, then DOWN_S; a fused run takes UP_S, then per round the server's
    SERVER_DRAFT_S + QUEUE_S + VERIFY_S, the first round's DOWN_S on top (later rounds'
    downlinks overlap the server's next round). The server times it reports are replaced
    by these, so every time the drafter records is exact."""

    def __init__(self, inner: RemoteVerifier, clock: _FakeClock) -> None:
        self.inner = inner
        self.clock = clock

    def open(self, spec: SessionSpec) -> None:
        self.inner.open(spec)

    def close(self, session_id: str) -> None:
        self.inner.close(session_id)

    def _server_times(self, reply: VerifyReply) -> VerifyReply:
        return dataclasses.replace(reply, queue_s=QUEUE_S, verify_s=VERIFY_S)

    def verify(self, call: VerifyCall) -> VerifyReply:
        self.clock.now_s += UP_S
        reply = self.inner.verify(call)
        self.clock.now_s += QUEUE_S + VERIFY_S + DOWN_S
        return self._server_times(reply)

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        self.clock.now_s += UP_S
        for index, fused_round in enumerate(self.inner.run_fused(call)):
            self.clock.now_s += SERVER_DRAFT_S + QUEUE_S + VERIFY_S + (DOWN_S if index == 0 else 0)
            reply = self._server_times(fused_round.reply)
            yield dataclasses.replace(fused_round, draft_s=SERVER_DRAFT_S, reply=reply)


def test_round_timestamps_around_a_switch(make_server: ServerFactory, draft_model: Any) -> None:
    """D F F D with a fake device clock. Asserted exactly, for the four rounds: start and
    end (a distributed round ends when its reply arrives; a fused round starts when the
    previous round reached the device — the fused request's sending for the run's first —
    and ends when its streamed round arrives), draft time (0 on the device: the fake
    clock stands still while drafting; the server's reported drafting time in fused
    rounds), queue and verify time (the server's, replaced by fixed values), uplink and
    downlink (the measured remainder, split evenly for rounds that crossed the uplink,
    0 for a fused round the server started by itself), the first token's and the
    finish time, and the network time the window policy saw. Not asserted: anything
    timed by the server's own clock (its history's first-token age)."""
    policy = ScriptedWindow((False, True, True, False))
    server = make_server(window=policy)
    clock = _FakeClock()
    verifier = _TimedVerifier(RemoteVerifier(f"127.0.0.1:{server.port}"), clock)
    result = generate(
        verifier,
        TransformersDraft(draft_model),
        PROMPTS[2],
        SamplingParams(max_new_tokens=MAX_NEW),
        DraftOptions(session_id="timed"),
        policy,
        clock=clock,
    )
    distributed = UP_S + QUEUE_S + VERIFY_S + DOWN_S  # 1.125
    first_fused = UP_S + SERVER_DRAFT_S + QUEUE_S + VERIFY_S + DOWN_S  # 1.1875
    next_fused = SERVER_DRAFT_S + QUEUE_S + VERIFY_S  # 0.6875
    ends = list(itertools.accumulate((distributed, first_fused, next_fused, distributed)))
    starts = [0.0, *ends[:3]]
    expected = [
        # (start, end, draft, uplink, queue, verify, downlink, fused)
        (starts[0], ends[0], 0.0, 0.25, QUEUE_S, VERIFY_S, 0.25, False),
        (starts[1], ends[1], SERVER_DRAFT_S, 0.25, QUEUE_S, VERIFY_S, 0.25, True),
        (starts[2], ends[2], SERVER_DRAFT_S, 0.0, QUEUE_S, VERIFY_S, 0.0, True),
        (starts[3], ends[3], 0.0, 0.25, QUEUE_S, VERIFY_S, 0.25, False),
    ]
    got = [
        (r.start_s, r.end_s, r.draft_s, r.uplink_s, r.queue_s, r.verify_s, r.downlink_s, r.fused)
        for r in result.rounds[:4]
    ]
    assert got == expected
    assert ends == [1.125, 2.3125, 3.0, 4.125]
    assert [r.start_s for r in result.rounds[4:]] == [r.end_s for r in result.rounds[3:-1]]
    assert result.request.arrival_s == 0.0
    assert result.request.first_token_s == ends[0]
    assert result.request.finish_s == result.rounds[-1].end_s == clock.now_s
    assert [obs.rtt_s for obs in policy.seen[1:5]] == [0.5, 0.5, 0.5, 0.5]
    assert [r.num_drafted for r in result.rounds[:4]] == [
        DISTRIBUTED_GAMMA,
        FUSED_GAMMA,
        FUSED_GAMMA,
        DISTRIBUTED_GAMMA,
    ]
