"""AWC across hosts: the device's and the server's policy objects hand the draft–target
pair's stabiliser state to each other with every fused run (``HistorySnapshot.window_state``),
so that they decide exactly as the simulator's one object does; a state the server's policy
refuses fails that request, naming the field, and the server keeps serving."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.awc import AwcState, AwcWindow
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.stop_drafting import DenseLayer
from edgespec.policies.wc_dnn import WcDnn
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, SessionSpec
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory

PROMPT = (5, 6, 7, 8, 9)
GREEDY = SamplingParams(max_new_tokens=24)
FUSED_GAMMA = 3


def _constant_awc(raw: float) -> AwcWindow:
    """AWC whose WC-DNN predicts ``raw`` whatever it observes (timings cannot matter)."""
    z = DenseLayer(np.zeros((4, 4)), np.zeros(4))
    model = WcDnn(
        mean=np.zeros(5),
        scale=np.ones(5),
        input=DenseLayer(np.zeros((5, 4)), np.zeros(4)),
        blocks=((z, z), (z, z)),
        output=DenseLayer(np.zeros((4, 1)), np.array([raw])),
    )
    return AwcWindow(model, initial_gamma=4, fused_gamma=FUSED_GAMMA)


def _generate(port: int, session_id: str, policy: Any) -> GenerationResult:
    return generate(
        RemoteVerifier(f"127.0.0.1:{port}"),
        NgramDrafter(),
        PROMPT,
        GREEDY,
        DraftOptions(session_id=session_id, client_id="edge-1"),
        policy,
    )


def _modes(result: GenerationResult) -> list[bool]:
    return [r.fused for r in result.rounds]


def test_device_and_server_objects_decide_as_one_object(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """The prediction is always 1: round 0 has no verdict yet (γ 4), round 1 is the first
    near-1 step (γ 1, distributed), and from round 2 every round is fused (k = 2, γ 3). A server
    whose policy started from a fresh state would need two steps of its own before staying
    fused, so its first fused run would end after one round."""
    reference = target_greedy_decode(target, PROMPT, GREEDY.max_new_tokens)
    shared = _constant_awc(-5.0)
    one = _generate(make_server(window=shared).port, "shared", shared)
    device, server_policy = _constant_awc(-5.0), _constant_awc(-5.0)
    two = _generate(make_server(window=server_policy).port, "split", device)
    assert one.output_token_ids == two.output_token_ids == reference
    expected = [False, False] + [True] * (len(one.rounds) - 2)
    assert _modes(one) == expected
    assert _modes(two) == expected
    assert all(r.num_drafted <= FUSED_GAMMA for r in two.rounds[2:])
    # the device took the state back when the run ended: one step per round after round 0
    steps = len(two.rounds) - 1
    assert device.state("edge-1") == AwcState(1.0, steps, True) == shared.state("edge-1")
    # the server forgot the pair when it handed the state back: the device owns it between
    # runs (what the server keeps is bounded by its runs in flight, not by client_ids named)
    assert server_policy.state("edge-1") == AwcState() and server_policy.pair_state("edge-1") == ()


def test_a_refused_window_state_fails_the_request_and_the_server_keeps_serving(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server(window=_constant_awc(-5.0))
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("s", "edge-1", PROMPT, GREEDY))
    bad = HistorySnapshot(window_state=(99.0, 0.0, 0.0))
    with pytest.raises(RequestError) as info:
        list(verifier.run_fused(FusedCall("s", len(PROMPT), 3, bad)))
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "history snapshot: window_state refused by window policy AwcWindow: "
        "AWC pair state: smoothed must be in [1, 12], got 99.0",
    )
    with pytest.raises(RequestError) as info:  # not a number the wire can carry as state
        list(verifier.run_fused(FusedCall("s", len(PROMPT), 3, _nan_state())))
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert info.value.message == "history snapshot: window_state must hold finite floats, got nan"
    # the session is intact and fused runs with a good state go on
    good = HistorySnapshot(window_state=(1.0, 5.0, 1.0))
    rounds = list(verifier.run_fused(FusedCall("s", len(PROMPT), 3, good)))
    assert all(r.gamma == 3 for r in rounds) and rounds[-1].end is not None
    committed = [t for r in rounds for t in r.reply.outcome.committed_token_ids]
    reference = target_greedy_decode(target, PROMPT, GREEDY.max_new_tokens)
    assert tuple(committed) == reference[: len(committed)]


def _nan_state() -> HistorySnapshot:
    """A snapshot carrying NaN, built past its own check (as a foreign client could send)."""
    snapshot = HistorySnapshot()
    object.__setattr__(snapshot, "window_state", (float("nan"), 0.0, 0.0))
    return snapshot
