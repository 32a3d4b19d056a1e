"""Parity: for the same sessions in the same state, the simulator and the real server
build the same queue for the batching policy (draft, new and cached tokens per entry, the
same limits and force) and so every registered batching policy picks the same batch."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("torch")

from edgespec.config import ServerConfig, from_dict
from edgespec.core.types import BatchPlan, Request, SamplingParams
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.policies.registry import BATCHING, build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.engine import VerificationEngine
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server import VerificationService
from edgespec.runtime.testing import tiny_llama
from edgespec.sim.build import build_entities
from edgespec.sim.choice import select_batch
from edgespec.sim.entities import Session
from edgespec.sim.scenario import scenario_from_dict

PROMPTS = [5, 30, 12, 50, 8]  # prompt lengths
WARM = {1: 2, 3: 1}  # sessions verified once before (their draft length), so KV is cached
DRAFTS = [2, 1, 3, 4, 2]  # this round's draft lengths
LIMITS = {"max_batch_size": 3, "max_batch_tokens": 60, "kv_budget_tokens": 4000}
TABLE_12 = {"a_s": 3.314e-05, "b_compute_s": 3.450e-08, "b_read_s": 4.620e-06, "c_s": 1.486e-02}
PARAMS: dict[str, dict[str, Any]] = {
    "fcfs": {},
    "lab": {"max_length_ratio": 3.0},
    "wisp": TABLE_12,
}


@dataclass
class Recording:
    inner: BatchingPolicy
    seen: list[tuple[Any, BatchLimits, tuple[int, ...]]] = field(default_factory=list)

    def select(self, queue: Any, now_s: float, limits: BatchLimits) -> BatchPlan:
        plan = self.inner.select(queue, now_s, limits)
        order = {e.entry_id: i for i, e in enumerate(queue)}
        shapes = tuple((e.num_draft_tokens, e.num_new_tokens, e.num_cached_tokens) for e in queue)
        self.seen.append((shapes, limits, tuple(order[i] for i in plan.entry_ids)))
        return plan


def test_every_registered_batching_policy_is_covered() -> None:
    assert set(PARAMS) == set(BATCHING)


def _runtime(name: str) -> tuple[Recording, dict[int, int]]:
    target = TransformersTarget(tiny_llama(seed=0))
    engine = VerificationEngine(target, kv_budget_tokens=LIMITS["kv_budget_tokens"])
    committed = {}
    for i, n in enumerate(PROMPTS):
        prompt = tuple((7 * i + j) % 60 for j in range(n))
        engine.open_session(SessionSpec(f"s{i}", "c", prompt, SamplingParams(max_new_tokens=32)))
        committed[i] = 0
        if i in WARM:
            out = engine.verify_batch([VerifyCall(f"s{i}", n, (1,) * WARM[i])])[0]
            committed[i] = len(out.committed_token_ids)  # type: ignore[union-attr]
    recording = Recording(build_policy("batching", name, PARAMS[name]))
    config = from_dict(ServerConfig, {k: v for k, v in LIMITS.items()})

    async def scenario() -> None:
        service = VerificationService(engine, config, recording)
        calls = [
            service.verify(VerifyCall(f"s{i}", n + committed[i], (2,) * DRAFTS[i]))
            for i, n in enumerate(PROMPTS)
        ]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0)  # all queued before the scheduler's first look
        await service.start()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=20)
        await service.stop()

    asyncio.run(scenario())
    return recording, committed


def _simulated(name: str, committed: dict[int, int]) -> Recording:
    scenario = scenario_from_dict(
        {"auto_topology": {"devices": [{"count": len(PROMPTS)}], "servers": [{"count": 1}]}}
    )
    devices, (server,) = build_entities(scenario)
    server.kv_budget = LIMITS["kv_budget_tokens"]
    for i, n in enumerate(PROMPTS):
        request = Request(f"s{i}", "c", 0.0, n, 32)
        s = Session(i, request, devices[i], server, None, None)
        s.committed = committed[i]
        s.sent = s.gamma_eff = DRAFTS[i]
        s.entry_id, s.enqueued_s = i, float(i)
        if committed[i]:
            server.store(i, n + committed[i] - 1)  # the KV the runtime keeps
        server.queue.append(s)
    server.num_active = len(PROMPTS)
    size, tokens, kv = LIMITS.values()
    limits = (BatchLimits(size, tokens, kv), BatchLimits(size, tokens, kv, force=True))
    recording = Recording(build_policy("batching", name, PARAMS[name]))
    while server.queue:  # the dispatched sessions stay active (they will come back)
        assert select_batch(server, 0.0, recording, limits)
    return recording


@pytest.mark.parametrize("name", sorted(BATCHING))
def test_batching_decisions_match(name: str) -> None:
    real, committed = _runtime(name)
    simulated = _simulated(name, committed)
    assert real.seen == simulated.seen
    assert len(real.seen) > 1  # the limits split the queue: several decisions compared
