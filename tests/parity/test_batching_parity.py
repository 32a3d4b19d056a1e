"""Parity: for the same sessions in the same state, the simulator and the real server
build the same queue for the batching policy (draft, new and cached tokens per entry, the
same limits and force, the same deadlines) and so every registered batching policy picks
the same batch. The requests all arrived at t = 0 but some devices were busy: their
sessions started (the runtime's session open) later, which a ``pace`` deadline reads."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("torch")

from edgespec.config import from_dict
from edgespec.core.types import BatchPlan, Request, SamplingParams
from edgespec.hardware.cost_models import load_wisp_coefficients
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.policies.registry import BATCHING, build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.testing import tiny_llama
from edgespec.sim.blocks.chain import ChainBlock
from edgespec.sim.loop.batch_choice import requeue_part, select_batch
from edgespec.sim.model.acceptance import IidAcceptance
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import Session
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.parts import build_entities

PROMPTS = [5, 30, 12, 50, 8]  # prompt lengths
WARM = {1: 2, 3: 1}  # sessions verified once before (their draft length), so KV is cached
DRAFTS = [2, 1, 3, 4, 2]  # this round's draft lengths
LIMITS = {"max_batch_size": 3, "max_batch_tokens": 60, "kv_budget_tokens": 4000}
CLASSES = {"a": 4.0, "b": 6.0}  # session i is in class "ab"[i % 2]
DRAFT_S = [0.02, 0.05, 0.03, 0.08, 0.01]  # this block's draft time, as the client reports it
NETWORK_S = [0.0, 0.04, 0.0, 0.03, 0.0]  # the client's last round's network time
START_S = [0.0, 5.0, 2.0, 0.0, 3.5]  # when each device took its request (arrived at 0) up
CLIENTS = ["x", "x", "x", "y", "y"]  # whose sessions (decodes-first's prefills take turns)
NOW_S = 6.0  # when every block arrives at the server and the policy decides
TABLE_12 = dataclasses.asdict(load_wisp_coefficients("a100-qwen3-32b"))
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "fcfs": ("fcfs", {}),
    "lab": ("lab", {"max_length_ratio": 3.0}),
    "decodes-first": ("decodes-first", {"max_decode_uncached_tokens": 4}),  # parts of 16
    "decodes-first-budget": (
        "decodes-first",
        {"max_decode_uncached_tokens": 4, "max_prefill_tokens": 20},  # one part and a prompt
    ),
    "wisp": ("wisp", TABLE_12),
    "wisp-wc": ("wisp", {**TABLE_12, "work_conserving": True}),  # the named variant
}
"""Each case: a registered policy and its parameters."""


@dataclass
class Recording:
    inner: BatchingPolicy
    seen: list[tuple[Any, BatchLimits, tuple[int, ...]]] = field(default_factory=list)

    def select(self, queue: Any, now_s: float, limits: BatchLimits) -> BatchPlan:
        plan = self.inner.select(queue, now_s, limits)
        order = {e.entry_id: i for i, e in enumerate(queue)}
        shapes = tuple(
            (
                e.num_draft_tokens,
                e.num_new_tokens,
                e.num_cached_tokens,
                e.slo_class,
                e.deadline_s,
                e.expected_accepted,
            )
            for e in queue
        )
        self.seen.append((shapes, limits, tuple(order[i] for i in plan.entry_ids)))
        return plan


def test_every_registered_batching_policy_is_covered() -> None:
    assert {name for name, _ in CASES.values()} == set(BATCHING)


def _runtime(
    name: str, rule: str, prompts: list[int] = PROMPTS, parts: int | None = None
) -> tuple[Recording, dict[int, int]]:
    target = TransformersTarget(tiny_llama(seed=0))
    budget = LIMITS["kv_budget_tokens"]
    engine = VerificationEngine(target, kv_budget_tokens=budget, prefill_part_tokens=parts)
    recording = Recording(build_policy("batching", *CASES[name]))
    settings = {**LIMITS, "slo_classes": CLASSES, "deadline_rule": rule}
    settings["prefill_part_tokens"] = parts
    config = from_dict(ServerConfig, settings)
    # each session opens at its start; block arrivals and decisions at NOW_S, as in the sim
    now_s = [0.0]
    service = VerificationService(engine, config, recording, clock=lambda: now_s[0])
    committed = {}
    for i, n in enumerate(prompts):
        prompt = tuple((7 * i + j) % 60 for j in range(n))
        sampling = SamplingParams(max_new_tokens=32)
        now_s[0] = START_S[i]
        client = CLIENTS[i]
        service.open_session(SessionSpec(f"s{i}", client, prompt, sampling, "ab"[i % 2]))
        committed[i] = 0
        if i in WARM:  # verified before, outside the service: no round it has seen
            warm = VerifyCall(f"s{i}", n, (1,) * WARM[i])
            while isinstance(out := engine.verify_batch([warm])[0], PrefillPart):
                pass  # its parts, one after the other
            committed[i] = len(out.committed_token_ids)  # type: ignore[union-attr]
    now_s[0] = NOW_S

    async def scenario() -> None:
        calls = [
            service.verify(
                VerifyCall(
                    f"s{i}",
                    n + committed[i],
                    (2,) * DRAFTS[i],
                    draft_s=DRAFT_S[i],
                    network_s=NETWORK_S[i],
                )
            )
            for i, n in enumerate(prompts)
        ]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0)  # all queued before the scheduler's first look
        await service.start()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=20)
        await service.stop()

    asyncio.run(scenario())
    return recording, committed


CHAIN = ChainBlock(IidAcceptance(0.8), DraftTimes())
"""The sessions' block model (the batching policy sees only what is queued)."""


def _simulated(
    name: str,
    rule: str,
    committed: dict[int, int],
    prompts: list[int] = PROMPTS,
    parts: int | None = None,
) -> Recording:
    scenario = scenario_from_dict(
        {
            "slo_classes": CLASSES,
            "auto_topology": {
                "devices": [{"count": len(PROMPTS), "slo_mix": {"a": 1}}],
                "servers": [{"count": 1}],
            },
        }
    )
    devices, (server,) = build_entities(scenario)
    server.kv_budget, server.part_tokens = LIMITS["kv_budget_tokens"], parts
    for i, n in enumerate(prompts):
        request = Request(f"s{i}", CLIENTS[i], 0.0, n, 32, slo_class="ab"[i % 2])
        slo = CLASSES["ab"[i % 2]]
        s = Session(i, request, devices[i], server, None, slo, True, START_S[i], block=CHAIN)
        s.committed = committed[i]
        s.sent = s.gamma_eff = DRAFTS[i]
        s.entry_id, s.enqueued_s = i, NOW_S
        s.round_draft_s, s.last_network_s = DRAFT_S[i], NETWORK_S[i]
        if committed[i]:
            server.store(i, n + committed[i] - 1)  # the KV the runtime keeps
        server.queue.append(s)
    server.num_active = len(PROMPTS)
    size, tokens, kv = LIMITS.values()
    limits = (BatchLimits(size, tokens, kv), BatchLimits(size, tokens, kv, force=True))
    recording = Recording(build_policy("batching", *CASES[name]))
    while server.queue:  # the dispatched sessions stay active (they will come back)
        chosen = select_batch(server, NOW_S, recording, limits, rule)  # type: ignore[arg-type]
        assert chosen
        for s in chosen:  # a prefill part's block comes back, as in the real scheduler
            requeue_part(s, server, 0.0)
    return recording


@pytest.mark.parametrize("rule", ["pace", "token_speed"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_batching_decisions_match(name: str, rule: str) -> None:
    """Same queue (shapes, classes, deadlines, expected acceptance), same limits, same
    batches, under both deadline rules."""
    real, committed = _runtime(name, rule)
    simulated = _simulated(name, rule, committed)
    assert real.seen == simulated.seen
    assert len(real.seen) > 1  # the limits split the queue: several decisions compared
    deadlines = {e[4] for shapes, _, _ in real.seen for e in shapes}
    assert None not in deadlines and len(deadlines) > 1


@pytest.mark.parametrize("name", sorted(CASES))
def test_pace_deadlines_start_when_the_device_took_the_request_up(name: str) -> None:
    """Under ``pace`` the first decision's queue carries d = start + (committed + 1) / s_c
    with the session's start (the device took the request up), not the request's arrival
    (t = 0): a session that started at 5 s is not 5 s late."""
    real, committed = _runtime(name, "pace")
    first_queue = real.seen[0][0]
    expected = [START_S[i] + (committed[i] + 1) / CLASSES["ab"[i % 2]] for i in range(5)]
    assert [e[4] for e in first_queue] == pytest.approx(expected, abs=1e-12)
    assert _simulated(name, "pace", committed).seen[0][0] == first_queue


LONG_PROMPTS = [40, 30, 25, 50, 8]
"""Sessions 0 and 2 start cold with more than 16 tokens: they are prefilled in parts."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_batching_decisions_match_with_prefill_in_parts(name: str) -> None:
    """With 16 tokens a batch, the cold long prompts come back to the queue after each
    part, with their next pass's sizes: both hosts show the policy the same queues."""
    real, committed = _runtime(name, "pace", LONG_PROMPTS, parts=16)
    simulated = _simulated(name, "pace", committed, LONG_PROMPTS, parts=16)
    assert real.seen == simulated.seen
    first_queue, later = real.seen[0][0], [e for shapes, _, _ in real.seen[1:] for e in shapes]
    assert [e[1] for e in first_queue] == [16, 1 + DRAFTS[1], 16, 1 + DRAFTS[3], 8 + DRAFTS[4]]
    assert (DRAFTS[0], 16, 16, "a") in [e[:4] for e in later]  # session 0's second part
