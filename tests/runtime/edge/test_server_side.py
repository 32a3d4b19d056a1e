"""A server-side baseline's stream (centralized, fused) lost once it has streamed goes on
where it was cut: a new ``Generate`` whose prompt is every committed token, the rest of the
budget, a seed of its own and the output counted as such; a stream lost before its first
chunk, or with an error no reconnect helps, is raised; the progress budget bounds the
reconnects. The "server" here serves one known output, REF, from whatever committed prefix
the spec's prompt holds (checked), so the output equals REF exactly when every resumed spec
is right."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.edge.progress import NoProgress, ProgressBudget
from edgespec.runtime.edge.reconnect import reopened_seed
from edgespec.runtime.edge.server_side import resumed_chunks
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from tests.runtime.round_fakes import Clock

PROMPT = (5, 6, 7)
REF = (11, 12, 13, 14, 15, 16, 17, 18)
SPEC = SessionSpec("s", "edge-0", PROMPT, SamplingParams(max_new_tokens=len(REF), seed=9,
                                                         min_tokens=6))  # fmt: skip
DOWN = RequestError(ErrorCode.UNAVAILABLE, "the server is gone")


class CuttingServer:
    """Serves REF's rest in chunks of two from the prefix a spec's prompt holds; its n-th
    call fails with ``cuts[n]`` after ``after[n]`` chunks (none past the lists). Each call
    takes a second of ``clock``: a retry window of 0 s holds one call."""

    def __init__(self, after: list[int], cuts: list[RequestError]) -> None:
        self.after, self.cuts = after, cuts
        self.asked: list[SessionSpec] = []
        self.clock = Clock()

    def generate(
        self, spec: SessionSpec, fused: bool, gamma: int, on_logprobs: Any, on_prompt: Any
    ) -> Iterator[tuple[int, ...]]:
        call = len(self.asked)
        self.asked.append(spec)
        self.clock.t += 1.0
        done = len(spec.prompt_token_ids) - len(PROMPT)
        assert spec.prompt_token_ids == (*PROMPT, *REF[:done])  # the committed prefix
        rest = REF[done : done + spec.sampling.max_new_tokens]
        for i in range(0, len(rest), 2):
            if call < len(self.after) and i // 2 == self.after[call]:
                raise self.cuts[call]
            yield rest[i : i + 2]


def _run(server: CuttingServer, budget: ProgressBudget | None = None) -> list[int]:
    """The output of a generation through ``server``; each resumption heard as it starts,
    with the tokens its spec's prompt holds beyond the prompt."""
    heard: list[int] = []
    chunks = resumed_chunks(server, SPEC, False, 1, None, server.clock, (0.0, 0.0),
                            budget or ProgressBudget(timeout_s=1e9),
                            on_reconnect=lambda e, n, s: heard.append(n))  # fmt: skip
    try:
        return [t for chunk in chunks for t in chunk]
    finally:
        assert heard == [len(s.prompt_token_ids) - len(PROMPT) for s in server.asked[1:]]


def test_a_lost_stream_goes_on_from_what_it_committed() -> None:
    server = CuttingServer(after=[2, 1], cuts=[DOWN, RequestError(ErrorCode.NOT_FOUND, "gone")])
    assert _run(server) == list(REF)
    first, second, third = server.asked
    assert [s.session_id for s in server.asked] == ["s", "s#r1.1", "s#r2.1"]
    assert (second.sampling.max_new_tokens, third.sampling.max_new_tokens) == (4, 2)
    assert (second.num_prior_output_tokens, third.num_prior_output_tokens) == (4, 6)
    assert (second.sampling.min_tokens, third.sampling.min_tokens) == (2, 0)
    assert second.sampling.seed == reopened_seed(9, 4) != first.sampling.seed


def test_a_stream_lost_before_its_first_chunk_is_raised_not_resumed() -> None:
    server = CuttingServer(after=[0], cuts=[DOWN])
    with pytest.raises(RequestError) as info:
        _run(server)
    assert info.value is DOWN and len(server.asked) == 1


def test_an_error_no_reconnect_helps_is_raised() -> None:
    refused = RequestError(ErrorCode.INVALID_ARGUMENT, "no")
    server = CuttingServer(after=[1], cuts=[refused])
    with pytest.raises(RequestError) as info:
        _run(server)
    assert info.value is refused and len(server.asked) == 1


def test_the_progress_budget_bounds_the_reconnects_without_a_token() -> None:
    """After the first cut every resumed stream fails before its first chunk: two
    reconnects in a row without a token are allowed, the third gives up."""
    server = CuttingServer(after=[1, 0, 0, 0, 0], cuts=[DOWN] * 5)
    with pytest.raises(NoProgress, match="2 reconnects"):
        _run(server, ProgressBudget(max_reconnects=2, timeout_s=1e9))
    assert len(server.asked) == 3


def test_a_resumed_streams_retries_end_with_the_progress_budget() -> None:
    """The server gone for good after two tokens: a resumed stream's first chunk was asked
    for over the whole --retry-timeout-s (5 s), past the 3 s progress budget (it gave up at
    7 s, saying 3). Each failed call takes 1 s of the clock here."""
    server = CuttingServer(after=[1, *[0] * 50], cuts=[DOWN] * 51)
    heard: list[float] = []
    chunks = resumed_chunks(server, SPEC, False, 1, None, server.clock, (0.0, 5.0),
                            ProgressBudget(max_reconnects=5, timeout_s=3.0),
                            on_reconnect=lambda e, n, s: heard.append(s))  # fmt: skip
    with pytest.raises(NoProgress, match="gave up after 3 s without a committed token"):
        list(chunks)
    assert server.clock.t <= 5.0  # the last token at 1 s
    assert heard == [3.0]  # the window told: what the budget leaves
