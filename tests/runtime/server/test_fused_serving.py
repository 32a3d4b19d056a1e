"""Fused runs on the server: its window policy (a broken one fails only its session, none
runs one round per request, ``edgespec serve --window``) and its workers (one client's long
runs do not hold back another's; a stop leaves none waiting)."""

from __future__ import annotations

import threading
from typing import Any

import grpc
import pytest

from edgespec.cli import build_parser
from edgespec.errors import UserInputError
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.registry import WINDOW
from edgespec.policies.window import DynamicWindow, StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.commands.serve import window_from_args
from edgespec.runtime.edge.drafter import GenerationResult
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import FusedCall, SessionSpec
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import raises_request_error
from tests.runtime.conftest import ServerFactory, start_server
from tests.runtime.fused_helpers import ALWAYS_FUSED, GREEDY, PROMPT, ScriptedWindow, generate_at
from tests.runtime.server.test_fused_switching import _check_decisions


class _BrokenWindow:
    def __init__(self, answer: str) -> None:
        self.answer = answer

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        if self.answer == "raise":
            raise ValueError("policy bug")
        return WindowDecision(0, True)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("raise", "window policy _BrokenWindow raised ValueError('policy bug')"),
        (
            "zero",
            "window policy _BrokenWindow returned WindowDecision(gamma=0, fused=True); "
            "expected WindowDecision(gamma=<integer >= 1>, fused=<bool>)",
        ),
    ],
)
def test_a_broken_server_window_fails_its_session_and_the_server_keeps_serving(
    target: TransformersTarget, draft_model: Any, answer: str, message: str
) -> None:
    server = start_server(
        target, lambda: TransformersDraft(draft_model), window=_BrokenWindow(answer)
    )
    reference = target_greedy_decode(target, PROMPT, 16)
    try:
        others: list[GenerationResult | BaseException] = []

        def other() -> None:  # a distributed session running meanwhile
            try:
                others.append(generate_at(server.port, "other", DynamicWindow()))
            except BaseException as exc:  # surfaced by the assertion below
                others.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        raises_request_error(
            ErrorCode.INTERNAL, message, generate_at, server.port, "bad", ALWAYS_FUSED
        )
        thread.join(timeout=60)
        assert isinstance(others[0], GenerationResult)
        assert others[0].output_token_ids == reference
        after = generate_at(server.port, "after", StaticWindow(4))
        assert after.output_token_ids == reference
    finally:
        server.stop(grace_s=0)


def test_without_a_server_window_each_fused_request_runs_one_round(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    """The default: the server runs the fused round it was asked for and hands the next
    decision back to the device's policy, which is consulted before every round."""
    server = make_server()  # a draft, no window policy
    script = (True, True, False, True, True)
    policy = ScriptedWindow(script)
    result = generate_at(server.port, "default", policy, TransformersDraft(draft_model))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 16)
    assert [r.fused for r in result.rounds[: len(script)]] == list(script)  # 5 of 5 rounds
    _check_decisions(result, policy, server_decides=False)


def _window_args(*flags: str) -> Any:
    return window_from_args(build_parser().parse_args(["serve", *flags]))


def test_serve_window_flags() -> None:
    assert _window_args() is None
    assert _window_args("--window", "static", "--window-params", '{"gamma": 3, "fused": true}') == (
        StaticWindow(3, fused=True)
    )
    assert _window_args("--window", "dynamic") == DynamicWindow()
    for flags, message in [
        (("--window-params", "{}"), "--window-params needs --window NAME"),
        (
            ("--window", "static", "--window-params", "[3]"),
            "--window-params must be a JSON object, got [3]",
        ),
        (
            ("--window", "nope"),
            f"--window: unknown window policy 'nope'; known: {sorted(WINDOW)}",
        ),
        (  # was "--window: ...": the params gave it
            ("--window", "static", "--window-params", '{"gamma": 0}'),
            "--window-params: window policy 'static': gamma must be >= 1, got 0",
        ),
    ]:
        with pytest.raises(UserInputError) as info:
            _window_args(*flags)
        assert str(info.value) == message
    with pytest.raises(UserInputError) as info:
        _window_args("--window", "static", "--window-params", "{gamma")
    assert str(info.value).startswith("--window-params is not JSON: ")


def test_long_fused_runs_of_one_client_do_not_hold_back_anothers(
    make_server: ServerFactory,
) -> None:
    """More long fused Generates than the event loop's default thread pool holds
    (min(32, cpus + 4)), never read: another client's one-round RunFused still runs."""
    import os

    from edgespec.runtime.messages import PROTOCOL_VERSION

    server = make_server()
    address = f"127.0.0.1:{server.port}"
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(address))
    long_runs = []
    for index in range(min(32, (os.cpu_count() or 1) + 4) + 1):
        session = pb.OpenSessionRequest(
            protocol_version=PROTOCOL_VERSION,
            session_id=f"long-{index}",
            client_id="hog",
            prompt_token_ids=[1, 2, 3],
            sampling=pb.Sampling(max_new_tokens=4000),
        )
        long_runs.append(stub.Generate(pb.GenerateRequest(session=session, mode=1, gamma=1)))
    try:
        verifier = RemoteVerifier(address)
        verifier.open(SessionSpec("short", "other", PROMPT, GREEDY))
        done = threading.Event()
        rounds: list[Any] = []

        def one_round() -> None:
            rounds.extend(verifier.run_fused(FusedCall("short", 5, 3, HistorySnapshot())))
            done.set()

        threading.Thread(target=one_round, daemon=True).start()
        assert done.wait(timeout=30), "the other client's fused run never got a thread"
        assert len(rounds) == 1 and rounds[0].end is not None
        assert not all(run.done() for run in long_runs), "the long runs ended too soon to tell"
    finally:
        for run in long_runs:
            run.cancel()


def test_a_server_stopped_during_a_fused_generate_leaves_no_worker_waiting(
    make_server: ServerFactory,
) -> None:
    """The worker of a run the stop interrupted ends (before, it waited forever on the
    stopped loop to reopen its session, and the process could not exit)."""
    import time

    from edgespec.runtime.messages import PROTOCOL_VERSION

    server = make_server()
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    session = pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id="long",
        client_id="c",
        prompt_token_ids=[1, 2, 3],
        sampling=pb.Sampling(max_new_tokens=4000),
    )
    run = stub.Generate(pb.GenerateRequest(session=session, mode=1, gamma=1))
    next(run)  # the run is under way
    server.stop(grace_s=0)
    deadline = time.monotonic() + 10
    while any(t.name.startswith("edgespec-fused") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a fused worker is still waiting"
        time.sleep(0.05)
