"""VerificationService's own request checks: the fused gamma range (before any draft
model is built) and the rejection counter."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService


def _no_drafter() -> DraftBackend:
    raise AssertionError("a rejected request must not build a drafter")


@pytest.mark.parametrize("gamma", [0, 5])
def test_fused_gamma_outside_the_range_is_refused(target: TransformersTarget, gamma: int) -> None:
    config = from_dict(ServerConfig, {"max_draft_tokens": 4})
    service = VerificationService(VerificationEngine(target), config, FcfsBatching(), _no_drafter)
    spec = SessionSpec("s", "c", (3, 1, 4), SamplingParams(max_new_tokens=2))

    async def first() -> None:
        async for _ in service.generate(spec, True, gamma):
            break

    with pytest.raises(RequestError) as info:
        asyncio.run(first())
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        f"gamma {gamma} outside 1..4",
    )


def test_rejected_requests_are_counted(target: TransformersTarget) -> None:
    service = VerificationService(
        VerificationEngine(target), from_dict(ServerConfig, {}), FcfsBatching()
    )
    spec = SessionSpec("s", "c", (3, 1, 4), SamplingParams(max_new_tokens=2))
    service.open_session(spec)
    with pytest.raises(RequestError):
        service.open_session(dataclasses.replace(spec, prompt_token_ids=(3,)))  # already open
    assert service.stats().num_rejected == 1
