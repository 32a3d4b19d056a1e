"""A ``Generate`` closes its session before it yields the chunk marked finished. A client
stops reading at that chunk (``RemoteVerifier.generate`` cancels the stream there), so a
session closed only as the stream went on was closed after the client's next step: ``bench
serve`` read the server's counters for its next mode while the reference decodings of the
last one were still closing, and counted 27 sessions closed against the 20 its clients had
opened (CI, test_a_server_of_yours_counters_agree_in_both_modes)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import PROMPT

SPEC = SessionSpec("g", "x", PROMPT, SamplingParams(max_new_tokens=4))
Seen = tuple[tuple[int, ...], bool, int, int]  # tokens, finished, open sessions, closed


def _chunks_as_seen(service: VerificationService, fused: bool) -> list[Seen]:
    """Each chunk with the sessions open and the sessions closed as the client has it."""

    async def scenario() -> list[Seen]:
        await service.start()
        seen = []
        async for tokens, finished in service.generate(SPEC, fused, 2):
            stats, counters = service.stats(), service.metrics()
            seen.append((tokens, finished, stats.num_sessions, counters.num_sessions_closed))
        await service.stop()
        return seen

    return asyncio.run(scenario())


@pytest.mark.parametrize("mode", ["centralized", "colocated", "cloud_only"])
def test_the_session_is_closed_when_the_finished_chunk_comes(
    target: TransformersTarget, draft_model: Any, mode: str
) -> None:
    def drafter() -> DraftBackend:
        return TransformersDraft(draft_model)

    fused_rounds = "cloud_only" if mode == "cloud_only" else "colocated"
    config = from_dict(ServerConfig, {"fused_rounds": fused_rounds})
    factory = drafter if mode == "colocated" else None
    service = VerificationService(VerificationEngine(target), config, FcfsBatching(),
                                  draft_factory=factory)  # fmt: skip
    seen = _chunks_as_seen(service, fused=mode != "centralized")
    *before, last = seen
    assert last[1:] == (True, 0, 1)  # closed, and counted, before the client has it
    assert all(s[1:] == (False, 1, 0) for s in before) and before
    tokens = tuple(t for s in seen for t in s[0])
    assert tokens == target_greedy_decode(target, PROMPT, 4)
