"""A VerificationService over the real tiny target on a hand-set clock that only the backend
advances (:data:`STEP_S` per forward pass), for the request-handling tests
(test_server_handling.py, test_server_failures.py): every time in a reply is exact."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from edgespec.config import from_dict
from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import BatchLimits
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.round_log import RoundLog
from edgespec.runtime.server.service import VerificationService
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.round_fakes import Clock
from tests.runtime.wrapped_target import WrappedTarget

STEP_S = 0.5  # what one forward pass advances the clock by


class ClockedBackend(WrappedTarget):
    """The real target, recording each forward pass's item lengths, advancing ``clock``
    by ``STEP_S``, raising on token 13, and (with ``gate``) waiting for it to open."""

    def __init__(self, inner: TransformersTarget, clock: Clock) -> None:
        super().__init__(inner)
        self._clock = clock
        self.passes: list[list[int]] = []
        self.gate: threading.Event | None = None
        self.entered = threading.Event()
        self.finished = threading.Event()
        self.busy_seen: list[bool] = []
        self.service: VerificationService | None = None

    def forward(self, items: Any) -> Any:
        self.entered.set()
        if self.service is not None:
            self.busy_seen.append(self.service.stats().busy)
        if self.gate is not None:
            assert self.gate.wait(10)
        self.passes.append([len(item.new_token_ids) for item in items])
        self._clock.t += STEP_S
        if any(13 in item.new_token_ids for item in items):
            raise RuntimeError("poisoned token 13")
        out = self._inner.forward(items)
        self.finished.set()
        return out


class RecordingFcfs:
    """FCFS that records each call's ``limits.force``; with ``wait`` it answers an empty
    plan (wait) unless forced."""

    def __init__(self, wait: bool = False) -> None:
        self.wait = wait
        self.forces: list[bool] = []

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        self.forces.append(limits.force)
        if self.wait and not limits.force:
            return BatchPlan(())
        return FcfsBatching().select(queue, now_s, limits)


def make_service(
    target: TransformersTarget,
    policy: Any = None,
    batch_wait_s: float = 0.002,
    engine_clock: Clock | None = None,
    round_log: RoundLog | None = None,
    **overrides: Any,
) -> tuple[VerificationService, ClockedBackend, Clock]:
    clock = Clock()
    backend = ClockedBackend(target, clock)
    config = from_dict(ServerConfig, overrides)
    engine = VerificationEngine(backend, clock=engine_clock or clock)
    service = VerificationService(
        engine,
        config,
        policy or FcfsBatching(),
        clock=clock,
        batch_wait_s=batch_wait_s,
        round_log=round_log,
    )
    backend.service = service
    return service, backend, clock


def open_sessions(service: VerificationService, *sids: str) -> None:
    for sid in sids:
        service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))


def verify_later(service: VerificationService, sid: str, draft: tuple[int, ...]) -> Any:
    return asyncio.ensure_future(service.verify(VerifyCall(sid, len(PROMPT), draft)))


async def settle(tasks: Sequence[Any]) -> list[Any]:
    return list(await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10))
