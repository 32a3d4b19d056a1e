"""A semantic SH follow-up whose waiting pass lost its ``return_hidden`` rows under
``kv_budget_tokens`` is refused ``ABORTED`` (nothing committed): the edge drafter plays the
round again on the same session, counted against its progress budget, over loopback gRPC
with the tiny models; a pass that alone can never fit the budget fails at once."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import grpc
import numpy as np
import numpy.typing as npt
import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.progress import NoProgress, ProgressBudget
from edgespec.runtime.edge.semantic import SemanticRequest
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import ERROR_CODE, GRPC_STATUS
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.round_fakes import Clock, Drafter, Verifier
from tests.runtime.semantic_helpers import draft_coordinate_head

PROMPT = (3, 1, 4, 1, 5)
MAX_NEW = 24
GAMMA = 4
BUDGET = 300  # the generation's session alone holds at most ~100 tokens
INTRUDER = tuple((7 * i + 3) % 64 for i in range(BUDGET - 10))  # with it, ~290: no room
EVICTED = re.compile(
    r"session 's': the pass of its block at prefix_len (\d+), waiting for draft hidden "
    r"states, lost its (\d+) target hidden rows \(return_hidden\) under kv_budget_tokens; "
    r"nothing was committed: send the block again"
)


class FeatureDraft(TransformersDraft):
    """The tiny draft as a feature draft: its session is opened with ``return_hidden``, so
    a waiting pass holds the hidden rows its reply will carry."""

    @property
    def wants_target_hidden(self) -> bool:
        return True

    def observe_target_hidden(self, start_pos: int, rows: npt.NDArray[np.float32]) -> None:
        pass


class Intruded:
    """A client of the server whose first pass waiting for its follow-up is followed by
    another client's plain session on a long prompt (its KV evicts the waiting pass on a
    tight budget); records the ``ABORTED`` refusals it gets."""

    def __init__(self, server: ServerThread) -> None:
        self.inner = RemoteVerifier(f"127.0.0.1:{server.port}")
        self.other = RemoteVerifier(f"127.0.0.1:{server.port}")
        self.intruded = False
        self.aborted: list[RequestError] = []

    def open(self, spec: SessionSpec) -> None:
        self.inner.open(spec)

    def close(self, session_id: str) -> None:
        self.inner.close(session_id)

    def verify(self, call: VerifyCall) -> VerifyReply:
        try:
            reply = self.inner.verify(call)
        except RequestError as exc:
            if exc.code is ErrorCode.ABORTED:
                self.aborted.append(exc)
            raise
        if reply.outcome.hidden_request is not None and not self.intruded:
            self.intruded = True
            sampling = SamplingParams(max_new_tokens=8)
            self.other.open(SessionSpec("other", "c2", INTRUDER, sampling))
            self.other.verify(VerifyCall("other", len(INTRUDER), (1,)))
        return reply


@pytest.fixture
def serve(target: TransformersTarget) -> Iterator[Any]:
    started: list[ServerThread] = []

    def make(budget: int) -> ServerThread:
        rules = semantic_rules(draft_coordinate_head())
        server = start_server(target, rules=rules, kv_budget_tokens=budget)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop(grace_s=0)


def _run(verifier: Any, draft_model: Any, max_reconnects: int = 5) -> GenerationResult:
    return generate(
        verifier,
        FeatureDraft(draft_model),
        PROMPT,
        SamplingParams(max_new_tokens=MAX_NEW),
        DraftOptions("s", progress=ProgressBudget(max_reconnects, 60.0)),
        StaticWindow(GAMMA),
        semantic=SemanticRequest(12, 20e6, upload="sh"),
    )


def _sessions(server: ServerThread) -> int:
    assert server.service is not None
    return server.service.stats().num_sessions


def test_an_evicted_followup_is_replayed_with_the_roomy_servers_output(
    serve: Any, draft_model: Any
) -> None:
    roomy_verifier = Intruded(serve(65536))
    roomy = _run(roomy_verifier, draft_model)
    assert roomy_verifier.intruded and roomy_verifier.aborted == []
    assert (roomy.num_replays, roomy.num_reconnects) == (0, 0)
    tight_server = serve(BUDGET)
    tight_verifier = Intruded(tight_server)
    tight = _run(tight_verifier, draft_model)  # was: FAILED_PRECONDITION raised
    assert tight.output_token_ids == roomy.output_token_ids
    assert [r.num_accepted for r in tight.rounds] == [r.num_accepted for r in roomy.rounds]
    assert (tight.num_replays, tight.num_reconnects) == (1, 0)  # the same session, played again
    (aborted,) = tight_verifier.aborted  # the first round's: the prompt and its block
    match = EVICTED.fullmatch(aborted.message)
    assert match is not None, aborted.message
    assert (int(match[1]), int(match[2])) == (len(PROMPT), len(PROMPT) + GAMMA)
    assert _sessions(tight_server) == 1  # the intruder's; the generation closed its own


def test_a_pass_that_never_fits_the_budget_fails_at_once_naming_the_budget(
    serve: Any, draft_model: Any
) -> None:
    """Budget 1: the first waiting pass alone holds more. Sent again it would too: the
    refusal is final (FAILED_PRECONDITION) and the generation fails on it, with no replay
    (it was ABORTED and played 1 + 2 times before giving up), and closes its session."""
    server = serve(1)
    verifier = Intruded(server)
    verifier.intruded = True  # alone
    with pytest.raises(RequestError) as info:
        _run(verifier, draft_model, max_reconnects=2)
    assert not isinstance(info.value, NoProgress) and verifier.aborted == []
    assert info.value.code is ErrorCode.FAILED_PRECONDITION
    rows = len(PROMPT) + GAMMA  # the first round's pass: the prompt and its block
    assert info.value.message == (
        f"session 's': the pass of its block at prefix_len {len(PROMPT)}, waiting for draft "
        f"hidden states, held {2 * rows} tokens (KV and {rows} target hidden rows, "
        "return_hidden), over kv_budget_tokens 1 alone: sent again it would not fit either; "
        "nothing was committed (raise kv_budget_tokens, or draft without target hidden states)"
    )
    assert _sessions(server) == 0


def test_aborted_travels_as_grpc_aborted() -> None:
    assert GRPC_STATUS[ErrorCode.ABORTED] is grpc.StatusCode.ABORTED
    assert ERROR_CODE[grpc.StatusCode.ABORTED] is ErrorCode.ABORTED


def _scripted(failures: list[ErrorCode], retry_timeout_s: float = 30.0) -> Any:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.failures = failures
    options = DraftOptions("s", retry_timeout_s=retry_timeout_s, retry_backoff_s=0.0,
                           progress=ProgressBudget(2, 60.0))  # fmt: skip
    result = generate(verifier, Drafter(clock), PROMPT, SamplingParams(max_new_tokens=4),
                      options, StaticWindow(4), clock=clock)  # fmt: skip
    return result, verifier


def test_an_aborted_round_is_played_again_on_the_same_session() -> None:
    result, verifier = _scripted([ErrorCode.ABORTED, ErrorCode.ABORTED])
    assert (result.num_replays, result.num_reconnects) == (2, 0)
    assert [s.session_id for s in verifier.specs] == ["s"]  # never reopened
    assert [c.session_id for c in verifier.calls] == ["s"] * 4  # 2 aborted, then 2 rounds
    blocks = [(c.prefix_len, c.draft_token_ids) for c in verifier.calls]
    assert blocks[0] == blocks[1] == blocks[2]  # the same block again
    assert verifier.closed == ["s"]  # at the end only
    assert len(result.output_token_ids) == 4


def test_an_aborted_round_counts_against_the_progress_budget_and_retry_timeout() -> None:
    with pytest.raises(NoProgress, match=r"^UNAVAILABLE: gave up after 2 replays .*"
                       r"\(0 committed; last error ABORTED: scripted failure\)$"):  # fmt: skip
        _scripted([ErrorCode.ABORTED] * 3)
    with pytest.raises(NoProgress, match=r"^UNAVAILABLE: gave up after 2 reconnects and "
                       r"replays .*last error ABORTED: scripted failure\)$"):  # fmt: skip
        _scripted([ErrorCode.UNAVAILABLE, ErrorCode.ABORTED, ErrorCode.ABORTED])
    with pytest.raises(RequestError) as info:  # the refusal came 1 s after the call was sent
        _scripted([ErrorCode.ABORTED], retry_timeout_s=0.5)
    assert (info.value.code, info.value.message) == (ErrorCode.ABORTED, "scripted failure")
