"""The server's two choices, as the engine makes them: which server a new request goes to
(join-shortest-queue, inlined for the fast path) and which queued rounds the next batch
verifies (through the scenario's batching policy)."""

from __future__ import annotations

import numpy as np

from edgespec.core.types import PendingVerification
from edgespec.policies.contracts import check_batch_plan
from edgespec.policies.inputs import pace_deadline_s
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.sim.entities import ServerState, Session


def route_jsq(servers: list[ServerState], rng: np.random.Generator) -> ServerState:
    """JoinShortestQueueRouting.route, inline (same ties, same random draws)."""
    best_queue = best_active = -1
    tied: list[ServerState] = []
    for s in servers:  # lexicographic minimum of (queue length, active sessions)
        queued = len(s.queue)
        active = s.num_active
        if best_queue < 0 or queued < best_queue or (queued == best_queue and active < best_active):
            best_queue, best_active = queued, active
            tied = [s]
        elif queued == best_queue and active == best_active:
            tied.append(s)
    return tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]


def deadline_s(s: Session) -> float | None:
    """When this round's committed tokens must exist to keep the request on its SLO
    class's token-speed pace (WISP): arrival + (committed + 1) / target; None if the
    class has no target."""
    if s.slo_tokens_per_s is None:
        return None
    return pace_deadline_s(s.request.arrival_s, s.committed, s.slo_tokens_per_s)


def batch_shape(s: Session, server: ServerState) -> tuple[int, int]:
    """(new, cached) tokens this entry forwards now: the uncached rest of its context."""
    cached = server.kv.get(s.index, 0)
    context = s.request.num_prompt_tokens + s.committed + s.sent
    return context - cached, cached


def select_batch(
    server: ServerState,
    t: float,
    policy: BatchingPolicy,
    limits: tuple[BatchLimits, BatchLimits],
) -> list[Session]:
    """The sessions ``policy`` puts in the next batch, removed from ``server.queue`` with
    their (new, cached) sizes set; ``limits`` = (normal, forced), forced when every active
    session is queued (nothing else in flight, so the policy must choose something)."""
    by_id: dict[int, Session] = {}
    pending = []
    for s in server.queue:
        new, cached = batch_shape(s, server)
        by_id[s.entry_id] = s
        pending.append(
            PendingVerification(
                entry_id=s.entry_id,
                session_id=s.request.request_id,
                client_id=s.request.client_id,
                enqueued_s=s.enqueued_s,
                num_draft_tokens=s.sent,
                num_new_tokens=new,
                num_cached_tokens=cached,
                slo_class=s.request.slo_class,
                deadline_s=deadline_s(s),
            )
        )
    force = server.num_active == len(server.queue)
    entry_ids = check_batch_plan(
        policy, policy.select(pending, t, limits[force]), pending, limits[force]
    )
    if not entry_ids:
        return []
    chosen = [by_id[i] for i in entry_ids]
    for entry, s in zip(pending, server.queue, strict=True):
        s.batch_new, s.batch_cached = entry.num_new_tokens, entry.num_cached_tokens
    taken = set(entry_ids)
    server.queue = [s for s in server.queue if s.entry_id not in taken]
    return chosen
