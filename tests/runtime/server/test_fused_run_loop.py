"""The server's fused-run loop on scripted fakes (no model, no gRPC): the γ of each round,
the history and pair state handed back, the draft's random stream, and the worker-thread
bridge (cancellation, errors, the session closed behind the baseline). The checks before
a run: test_fused_setup_checks.py."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.interfaces import WindowDecision
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.base import DraftProposal
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.edge.rounds import draft_rng
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.fused_baseline import fused_generate
from edgespec.runtime.server.fused_run import run_fused_rounds
from edgespec.runtime.server.fused_setup import FusedStart, ServerWindow
from edgespec.runtime.server.worker_bridge import ServiceVerifier, from_worker
from tests.runtime.round_fakes import DRAFT_S, Clock, Drafter, StatefulRecording, Verifier

PROMPT = (1, 2, 3)


class RngDrafter(Drafter):
    """Records the first draw of the random stream it is handed."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.draws: list[float] = []
        self.shapings: list[DraftShaping | None] = []

    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        self.draws.append(float(rng.random()))
        self.shapings.append(shaping)
        return super().propose(context, gamma, temperature, rng, shaping)


def _run(
    window: ServerWindow | None,
    max_new_tokens: int = 20,
    history: HistorySnapshot | None = None,
    gamma: int = 4,
    repetition_penalty: float = 1.0,
) -> tuple[list[FusedRound], RngDrafter]:
    clock = Clock()
    verifier = Verifier(clock)
    sampling = SamplingParams(max_new_tokens=max_new_tokens, seed=5,
                              repetition_penalty=repetition_penalty)  # fmt: skip
    spec = SessionSpec("s", "dev", PROMPT, sampling)
    verifier.open(spec)
    drafter = RngDrafter(clock)
    call = FusedCall("s", len(PROMPT), gamma, history or HistorySnapshot())
    rounds: list[FusedRound] = []
    start = FusedStart(drafter, spec, PROMPT)  # type: ignore[arg-type]
    run_fused_rounds(verifier, call, start, window, clock, rounds.append)  # type: ignore[arg-type]
    return rounds, drafter


def test_a_fused_run_follows_the_server_windows_decisions() -> None:
    policy = StatefulRecording([WindowDecision(3, True), WindowDecision(2, False)])
    start = HistorySnapshot(num_rounds=2, gamma=4, num_committed_total=7, window_state=(1.0,))
    rounds, drafter = _run(ServerWindow(policy, 64), history=start)
    assert policy.restored == [("dev", (1.0,)), ("dev", ())]  # handed back, then forgotten
    assert drafter.gammas == [4, 3]  # the third token of each block is wrong
    assert [(r.gamma, r.draft_token_ids) for r in rounds] == [(4, (4, 5, 13, 7)), (3, (7, 8, 16))]
    assert [r.reply.outcome.committed_token_ids for r in rounds] == [(4, 5, 6), (7, 8, 9)]
    assert [r.draft_s for r in rounds] == [DRAFT_S, DRAFT_S]
    assert rounds[0].end is None and rounds[1].end is not None
    end = rounds[1].end
    assert end.next_decision == WindowDecision(2, False)
    snap = end.history
    assert (snap.num_rounds, snap.gamma, snap.num_committed_total) == (4, 3, 13)
    assert (snap.fused, snap.last_num_accepted, snap.window_state) == (True, 2, (3.0, 0.5))
    assert [(o.previous_gamma, o.previous_fused, o.pair) for o in policy.seen] == [
        (4, True, "dev"),
        (3, True, "dev"),
    ]
    assert drafter.draws == list(draft_rng(5, 2, 3).random(2))  # this run's own stream


def test_the_co_located_draft_is_shaped_as_the_session_asks() -> None:
    """A penalized session's draft makes its penalty over the session's prompt and output
    (runtime/backends/draft_shaping.py); a plain one's rows are left as they are."""
    _, drafter = _run(None, repetition_penalty=1.25)
    assert drafter.shapings == [DraftShaping(len(PROMPT), repetition_penalty=1.25)]
    _, plain = _run(None)
    assert plain.shapings == [None]


def test_without_a_server_window_one_round_hands_the_state_back_as_it_came() -> None:
    start = HistorySnapshot(window_state=(0.25, 2.0))
    rounds, _ = _run(None, history=start)
    (only,) = rounds
    assert only.end is not None and only.end.next_decision is None
    assert only.end.history.window_state == (0.25, 2.0)
    assert (only.end.history.num_rounds, only.end.history.num_committed_total) == (1, 3)


def test_the_block_is_capped_by_the_budget_and_a_finished_request_is_not_decided() -> None:
    policy = StatefulRecording([WindowDecision(4, True)])
    rounds, drafter = _run(ServerWindow(policy, 64), max_new_tokens=3)
    assert drafter.gammas == [2]  # 3 tokens left: 2 drafted, the verifier adds one
    (only,) = rounds
    assert only.reply.outcome.finished and only.end is not None
    assert only.end.next_decision is None and policy.seen == []


class _Service:
    """The service calls a fused run makes, answered by a round_fakes verifier."""

    def __init__(self) -> None:
        self.inner = Verifier(Clock())
        self.calls: list[tuple[VerifyCall, str | None]] = []
        self.closed: list[str] = []
        self.fused_executor = None  # the event loop's default pool

    def open_session(self, spec: SessionSpec, owner: str | None, *, fresh: bool = False) -> None:
        assert fresh  # a worker's session is its own
        self.inner.open(spec)

    async def verify(
        self,
        call: VerifyCall,
        owner: str | None,
        time_left_s: float | None = None,
        in_run: bool = False,
    ) -> VerifyReply:
        assert in_run  # a fused run's rounds say so
        self.calls.append((call, owner))
        return self.inner.verify(call)

    def close_session(
        self, session_id: str, owner: str | None = None, serial: int | None = None
    ) -> None:
        assert serial in (None, self.session_serial(session_id))  # its own session's
        self.closed.append(session_id)

    def session_serial(self, session_id: str) -> int:
        return 1


def _loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()


def test_service_verifier_reports_no_network_time_and_refuses_once_cancelled() -> None:
    for loop in _loop():
        service = _Service()
        verifier = ServiceVerifier(service, loop, owner="tok")  # type: ignore[arg-type]
        verifier.open(SessionSpec("s", "dev", PROMPT, SamplingParams(max_new_tokens=8)))
        reply = verifier.verify(VerifyCall("s", 3, (4, 5), network_s=0.75))
        assert reply.outcome.committed_token_ids == (4, 5, 6)
        ((sent, owner),) = service.calls
        assert (sent.network_s, sent.draft_token_ids, owner) == (0.0, (4, 5), "tok")
        verifier.cancelled = True
        with pytest.raises(RequestError) as info:
            verifier.verify(VerifyCall("s", 6, (7,)))
        assert (info.value.code, info.value.message) == (
            ErrorCode.CANCELLED,
            "the fused-mode client went away",
        )
        verifier.close("s")
        assert len(service.calls) == 1 and service.closed == ["s"]


def test_a_session_the_verifier_did_not_open_is_not_closed() -> None:
    """The client went away before the open was sent (cancelled): the drafter, unsure
    whether its open made it, asks to close the id, which may be another client's open
    session; the verifier knows it opened nothing and leaves it (it closed it)."""
    for loop in _loop():
        service = _Service()
        verifier = ServiceVerifier(service, loop)  # type: ignore[arg-type]
        verifier.cancelled = True
        with pytest.raises(RequestError) as info:
            verifier.open(SessionSpec("x", "dev", PROMPT, SamplingParams(max_new_tokens=8)))
        assert info.value.code is ErrorCode.CANCELLED
        verifier.close("x")
        assert service.closed == [] and verifier.opened == set()


def test_the_worker_bridge_cancels_on_early_exit_and_raises_the_workers_error() -> None:
    async def main() -> None:
        verifier = ServiceVerifier(None, asyncio.get_running_loop())  # type: ignore[arg-type]
        got: list[int] = []

        def three(emit: Callable[[int], None]) -> None:
            for i in range(3):
                emit(i)

        items = from_worker(three, verifier)
        async with contextlib.aclosing(items) as stream:
            async for item in stream:
                got.append(item)
                break
        assert got == [0]
        assert verifier.cancelled

        def fails(emit: Any) -> None:
            emit("a")
            raise RequestError(ErrorCode.INTERNAL, "worker broke")

        seen = []
        other = ServiceVerifier(None, asyncio.get_running_loop())  # type: ignore[arg-type]
        with pytest.raises(RequestError, match="worker broke"):
            async for item in from_worker(fails, other):
                seen.append(item)
        assert seen == ["a"]

    asyncio.run(main())


def test_the_fused_baseline_streams_the_output_and_closes_the_session() -> None:
    service = _Service()
    spec = SessionSpec("g", "dev", PROMPT, SamplingParams(max_new_tokens=6))

    async def collect(limit: int | None) -> list[Any]:
        chunks: list[Any] = []
        drafter: Any = Drafter(Clock())
        stream: Any = fused_generate(service, spec, drafter, StaticWindow(4))  # type: ignore[arg-type]
        async with contextlib.aclosing(stream):
            async for chunk in stream:
                chunks.append(chunk)
                if len(chunks) == limit:
                    break
        return chunks

    chunks = asyncio.run(collect(None))
    assert [t for tokens, _ in chunks for t in tokens] == [4, 5, 6, 7, 8, 9]
    assert chunks[-1] == ((), True)
    assert service.closed[-1] == "g"
    service.closed.clear()
    first = asyncio.run(collect(1))
    assert first == [((4, 5, 6), False)]
    assert service.closed[-1] == "g"
