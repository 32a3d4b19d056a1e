"""A verification service over the real target whose passes wait for a gate: the tests
of a session's calls across its lifecycle hold a pass open while a caller goes away, a
session closes or a batch fails."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import Any

from edgespec.config import from_dict
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyReply
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.wrapped_target import WrappedTarget


class GatedTarget(WrappedTarget):
    """The real target, recording each pass's item lengths; a pass waits for ``gate``
    (``entered`` is set once one does) and, with ``fail_batches``, one of several fails."""

    def __init__(self, inner: TransformersTarget) -> None:
        super().__init__(inner)
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fail_batches = False
        self.passes: list[list[int]] = []

    def forward(self, items: Any) -> Any:
        self.entered.set()
        assert self.gate.wait(10)
        self.passes.append([len(item.new_token_ids) for item in items])
        if self.fail_batches and len(items) > 1:
            raise RuntimeError("a batch of several fails")
        return self._inner.forward(items)


def gated_service(
    target: TransformersTarget, *sids: str, config: dict[str, Any] | None = None
) -> tuple[VerificationService, GatedTarget]:
    """A service over a gated target (``config``: ServerConfig fields) with sessions
    ``sids`` open on PROMPT, greedy."""
    backend = GatedTarget(target)
    engine = VerificationEngine(backend)
    service = VerificationService(engine, from_dict(ServerConfig, config or {}), FcfsBatching())
    for sid in sids:
        service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))
    return service, backend


async def outcome(call: Awaitable[VerifyReply]) -> VerifyReply | RequestError:
    """A verify call's reply, or the request error it raised (within 10 s)."""
    try:
        return await asyncio.wait_for(call, 10)
    except RequestError as exc:
        return exc
