"""What a fused run does at the edges of what it is handed: a history whose counts the run
could push past the wire's range is refused before any round, naming the field; the first
token's age saturates at its cap; a round whose tokens are committed reaches the device even
when what follows its verdict fails (and the failure is ``INTERNAL`` saying what was
raised); and with auth on, one token's client cannot touch another's window state by naming
its ``client_id``."""

from __future__ import annotations

import threading
from typing import Any

import grpc
import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import PROTOCOL_VERSION
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory

PROMPT = (5, 6, 7, 8, 9)
GREEDY = SamplingParams(max_new_tokens=16)
MAX_COUNT = 2**31 - 1


def _stub(port: int) -> Any:
    return pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))


def _open(stub: Any, session_id: str, token: str | None = None, client_id: str = "edge") -> None:
    request = pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id=session_id,
        client_id=client_id,
        prompt_token_ids=list(PROMPT),
        sampling=pb.Sampling(max_new_tokens=GREEDY.max_new_tokens),
    )
    stub.OpenSession(request, timeout=30, metadata=_auth(token))


def _auth(token: str | None) -> tuple[tuple[str, str], ...]:
    return () if token is None else (("authorization", f"Bearer {token}"),)


def _run_fused(
    stub: Any, request: Any, token: str | None = None
) -> tuple[list[Any], tuple[grpc.StatusCode, str] | None]:
    """The chunks a RunFused streams and how it failed (``None``: it did not)."""
    chunks: list[Any] = []
    try:
        for chunk in stub.RunFused(request, timeout=60, metadata=_auth(token)):
            chunks.append(chunk)
    except grpc.RpcError as exc:
        return chunks, (exc.code(), exc.details())
    return chunks, None


def _fused(session_id: str, prefix_len: int = len(PROMPT), **history: Any) -> Any:
    snapshot = pb.HistorySnapshot(**history)
    return pb.FusedRequest(session_id=session_id, prefix_len=prefix_len, gamma=3, history=snapshot)


@pytest.mark.parametrize("field", ["num_rounds", "num_committed_total"])
def test_a_count_the_run_could_push_past_the_wire_s_range_is_refused(
    make_server: ServerFactory, field: str
) -> None:
    """16 tokens left: a run adds at most 16 rounds and 16 committed tokens."""
    stub = _stub(make_server().port)
    _open(stub, "s")
    room = MAX_COUNT - 16
    chunks, failed = _run_fused(stub, _fused("s", **{field: room + 1}))
    assert (chunks, failed) == (
        [],
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            f"history snapshot: {field} must be an integer in [0, {room}] for this run, "
            f"which may add up to 16 (one per token the session has left), got {room + 1}",
        ),
    )
    chunks, failed = _run_fused(stub, _fused("s", num_rounds=room, num_committed_total=room))
    assert failed is None and chunks[-1].run_ended  # nothing was committed before
    assert chunks[-1].history.num_rounds == room + len(chunks) <= MAX_COUNT
    committed = sum(len(c.verdict.committed_token_ids) for c in chunks)
    assert chunks[-1].history.num_committed_total == room + committed <= MAX_COUNT


def test_the_first_token_s_age_saturates_at_its_cap(make_server: ServerFactory) -> None:
    stub = _stub(make_server().port)
    _open(stub, "s")
    chunks, failed = _run_fused(stub, _fused("s", num_rounds=1, first_token_age_s=1e6))
    assert failed is None and chunks[-1].run_ended
    assert chunks[-1].history.first_token_age_s == 1e6


class _FailsAfterVerdict:
    """A server window policy that fails after the run's first verdict: ``decide`` raises
    (wrapped by the server as INTERNAL), or the pair state the run hands back raises
    something unexpected."""

    def __init__(self, where: str) -> None:
        self.where = where

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        if self.where == "decide":
            raise ValueError("policy bug")
        return WindowDecision(2, False)  # distributed: the run ends, its state handed back

    def pair_state(self, pair: str) -> tuple[float, ...]:
        raise RuntimeError("state bug")

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None:
        pass


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("decide", "window policy _FailsAfterVerdict raised ValueError('policy bug')"),
        ("state", "RunFused failed on the server: RuntimeError('state bug')"),
    ],
)
def test_a_committed_round_reaches_the_device_before_the_run_s_failure(
    make_server: ServerFactory, target: TransformersTarget, where: str, message: str
) -> None:
    stub = _stub(make_server(window=_FailsAfterVerdict(where)).port)
    _open(stub, "s")
    chunks, failed = _run_fused(stub, _fused("s"))
    assert failed == (grpc.StatusCode.INTERNAL, message)
    (chunk,) = chunks
    assert not chunk.run_ended
    committed = tuple(chunk.verdict.committed_token_ids)
    reference = target_greedy_decode(target, PROMPT, GREEDY.max_new_tokens)
    assert committed == reference[: len(committed)] and committed
    # the device holds what the server committed: its session goes on from there
    step = pb.VerifyRequest(session_id="s", prefix_len=len(PROMPT) + len(committed))
    after = stub.Verify(step, timeout=30)
    assert tuple(after.committed_token_ids) == reference[len(committed) : len(committed) + 1]


class _PairRecorder:
    """A window policy with per-pair state that records the pairs it is shown."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pairs: list[str] = []

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        with self.lock:
            self.pairs.append(obs.pair)
        return WindowDecision(2, False)

    def pair_state(self, pair: str) -> tuple[float, ...]:
        return ()

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None:
        with self.lock:
            self.pairs.append(pair)


def test_with_auth_a_client_id_names_a_pair_of_its_own_token_only(
    make_server: ServerFactory,
) -> None:
    policy = _PairRecorder()
    stub = _stub(make_server(window=policy, auth_tokens=("alpha", "beta")).port)
    seen = []
    for token in ("alpha", "beta"):
        _open(stub, token, token, client_id="edge")
        chunks, failed = _run_fused(stub, _fused(token), token)
        assert failed is None and chunks[-1].run_ended
        seen.append(set(policy.pairs))
        policy.pairs.clear()
    (alpha,), (beta,) = seen  # each run restored and decided under one pair
    assert alpha != beta
    assert alpha.startswith("edge") and beta.startswith("edge")
    assert "alpha" not in alpha + beta and "beta" not in alpha + beta  # no token in a key


def test_without_auth_the_pair_is_the_client_id(make_server: ServerFactory) -> None:
    policy = _PairRecorder()
    stub = _stub(make_server(window=policy).port)
    _open(stub, "s", client_id="edge")
    chunks, failed = _run_fused(stub, _fused("s"))
    assert failed is None and chunks[-1].run_ended and set(policy.pairs) == {"edge"}
