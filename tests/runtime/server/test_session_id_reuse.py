"""A session closed while its baseline or fused run went on, and opened again under its id
by another client, is that client's: the baseline's end closed it by id (a centralized
Generate as no owner, so even with auth on token A's Generate closed token B's session;
a fused Generate's by id too), and a fused run's end cleared the in-progress mark of the
next run on the session (plain verifications then reached a session whose rounds were the
run's). A server review found both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, SessionSpec, VerifyCall
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService

PROMPT = (1, 2, 3, 4, 5)


def _service(target: TransformersTarget, draft_model: Any = None) -> VerificationService:
    factory = None if draft_model is None else (lambda: TransformersDraft(draft_model))
    config = from_dict(ServerConfig, {"fused_rounds": "colocated"})
    return VerificationService(VerificationEngine(target), config, FcfsBatching(),
                               draft_factory=factory)  # fmt: skip


def _spec(client: str, num_tokens: int) -> SessionSpec:
    return SessionSpec("s", client, PROMPT, SamplingParams(max_new_tokens=num_tokens))


@pytest.mark.parametrize("fused", [False, True], ids=["centralized", "fused"])
def test_a_baseline_ending_leaves_a_session_opened_since_under_its_id(
    target: TransformersTarget, draft_model: Any, fused: bool
) -> None:
    """Token A's Generate runs; A closes its session; token B opens ``s``; A's Generate
    ends (its session is gone) and B's ``s`` is still open and verifies."""
    owner_a = "token-a" if not fused else None  # a fused run's verifier checks no owner
    owner_b = "token-b" if not fused else None

    async def scenario() -> tuple[list[Any], tuple[int, ...]]:
        service = _service(target, draft_model if fused else None)
        await service.start()
        seen: list[Any] = []

        async def generate() -> None:
            try:
                async for chunk in service.generate(_spec("a", 200), fused, 2, owner_a):
                    seen.append(chunk)
            except RequestError as exc:
                seen.append(exc.code)

        task = asyncio.create_task(generate())
        while not seen:
            await asyncio.sleep(0.001)
        assert service.close_session("s", owner_a)
        service.open_session(_spec("b", 4), owner_b)
        await asyncio.wait_for(task, 30)
        reply = await service.verify(VerifyCall("s", len(PROMPT), ()), owner_b)
        await service.stop()
        return seen, reply.outcome.committed_token_ids

    seen, committed = asyncio.run(scenario())
    # A's centralized Generate ends on its closed session; a fused one's round loop reopens
    # its session under a name of its own and goes on to its last chunk
    assert seen[-1] == (((), True) if fused else ErrorCode.NOT_FOUND)
    assert len(committed) == 1  # B's session: open, its first token committed


def test_a_fused_run_ending_leaves_the_next_runs_mark(
    target: TransformersTarget, draft_model: Any
) -> None:
    """Run A yields its last round (the session free for the device's next); run B starts
    on the session; A's generator closes after: B's rounds are still the session's only."""
    in_run = (ErrorCode.FAILED_PRECONDITION, "session 's' has a fused run in progress: its "
              "rounds are the run's until its last chunk")  # fmt: skip

    async def refusal(service: VerificationService, prefix: int) -> tuple[Any, str]:
        with pytest.raises(RequestError) as info:
            await service.verify(VerifyCall("s", prefix, ()))
        return info.value.code, info.value.message

    async def scenario() -> None:
        service = _service(target, draft_model)
        await service.start()
        service.open_session(_spec("a", 64))
        Run = AsyncGenerator[FusedRound, None]
        run_a = cast(Run, service.run_fused(FusedCall("s", len(PROMPT), 3, HistorySnapshot())))
        last = await run_a.__anext__()
        assert last.end is not None  # no window policy on the server: one round a run
        prefix = len(PROMPT) + len(last.reply.outcome.committed_token_ids)
        run_b = cast(Run, service.run_fused(FusedCall("s", prefix, 3, HistorySnapshot())))
        first_b = asyncio.ensure_future(run_b.__anext__())
        await asyncio.sleep(0)  # B's checks passed and its mark is set
        assert await refusal(service, prefix) == in_run
        await run_a.aclose()
        assert await refusal(service, prefix) == in_run  # was let through: A cleared B's mark
        assert (await first_b).end is not None
        await run_b.aclose()
        await service.stop()

    asyncio.run(scenario())


def test_a_generate_whose_session_another_owner_reopened_ends_not_found(
    target: TransformersTarget,
) -> None:
    """Token A's centralized Generate waits at its first chunk; A closes its session and token
    B opens ``s``: A's next round ends NOT_FOUND (its session was closed), not B's owner
    refusal, and B's session is untouched. The CI run that found it raced to either answer."""

    async def scenario() -> tuple[ErrorCode, str, int]:
        service = _service(target)
        await service.start()
        Chunks = AsyncGenerator[tuple[tuple[int, ...], bool], None]
        chunks = cast(Chunks, service.generate(_spec("a", 200), False, 2, "token-a"))
        await chunks.__anext__()  # paused at its yield: no verification in flight
        assert service.close_session("s", "token-a")
        service.open_session(_spec("b", 4), "token-b")
        with pytest.raises(RequestError) as info:
            await chunks.__anext__()
        reply = await service.verify(VerifyCall("s", len(PROMPT), ()), "token-b")
        await service.stop()
        return info.value.code, info.value.message, len(reply.outcome.committed_token_ids)

    code, message, num_committed = asyncio.run(scenario())
    assert (code, message) == (
        ErrorCode.NOT_FOUND,
        "session 's' was closed during this Generate: it ends here",
    )
    assert num_committed == 1
