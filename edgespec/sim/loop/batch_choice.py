"""The server's choice of which queued rounds the next batch verifies (through the
scenario's batching policy), as the engine makes it; routing is in
:mod:`edgespec.sim.model.router`."""

from __future__ import annotations

from edgespec.core.frozen import frozen_builder
from edgespec.core.prefill_parts import part_tokens
from edgespec.core.types import PendingVerification
from edgespec.policies.contracts import decide_batch
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.policies.slo import DEADLINE_FUNCTIONS, DeadlineRule, acceptance_estimate
from edgespec.sim.model.entities import ServerState, Session


def expected_accepted(s: Session) -> float:
    """N̂ᵛ of the queued block: α̂ (the session's acceptance over the positions it drafted
    so far, :func:`~edgespec.policies.slo.acceptance_estimate`) times its draft positions."""
    return acceptance_estimate(s.num_positions, s.num_accepted) * s.gamma_eff


def round_deadline_s(s: Session, rule: DeadlineRule, expected: float | None = None) -> float | None:
    """The deadline of the block ``s`` has queued (:mod:`edgespec.policies.slo`), from what
    the real server knows at its arrival: the arrival time, the session's start (when the
    device took the request up, later than its arrival when the device was busy: the
    runtime's session open), the tokens committed so far, this block's draft time and the
    previous round's network time (``expected``: :func:`expected_accepted`, when the caller
    has it)."""
    tokens_per_s = s.slo_tokens_per_s
    if tokens_per_s is None:
        return None
    return DEADLINE_FUNCTIONS[rule](
        tokens_per_s,
        s.enqueued_s,
        s.start_s,
        s.committed,
        expected_accepted(s) if expected is None else expected,
        s.round_draft_s,
        s.last_network_s,
    )


def batch_shape(s: Session, server: ServerState) -> tuple[int, int]:
    """(new, cached) tokens this entry forwards now: the uncached rest of its context."""
    cached = server.kv.get(s.index, 0)
    context = s.request.num_prompt_tokens + s.committed + s.sent
    return context - cached, cached


_pending_verification = frozen_builder(PendingVerification)  # one per round: built fast


def next_part(s: Session, server: ServerState, cached: int) -> int | None:
    """The prefill part ``s``'s next pass on ``server`` forwards with ``cached`` KV tokens
    resident (:func:`~edgespec.core.prefill_parts.part_tokens`; ``None``: its whole
    verification in one pass)."""
    context = s.request.num_prompt_tokens + s.committed
    fits = context + s.sent <= server.kv_budget
    return part_tokens(context - cached, s.sent, server.part_tokens, fits)


def pending_entry(
    s: Session, cached: int, rule: DeadlineRule = "pace", server: ServerState | None = None
) -> PendingVerification:
    """What the batching policy sees of the block ``s`` has queued, with ``cached`` KV
    tokens resident (the rest of its context is new; ``server``'s prefill part when it
    prefills in parts: :func:`next_part`)."""
    request = s.request
    sent = s.sent
    expected = acceptance_estimate(s.num_positions, s.num_accepted) * s.gamma_eff
    part = None if server is None or server.part_tokens is None else next_part(s, server, cached)
    return _pending_verification(
        s.entry_id,
        request.request_id,
        request.client_id,
        s.enqueued_s,
        sent,
        request.num_prompt_tokens + s.committed + sent - cached if part is None else part,
        cached,
        request.slo_class,
        round_deadline_s(s, rule, expected),
        expected,
    )


def requeue_part(s: Session, server: ServerState, pass_s: float) -> bool:
    """After a batch of ``pass_s`` seconds: when ``s``'s pass was a prefill part
    (:func:`next_part`), ``server`` keeps its KV and ``s`` goes back to the queue's end, its
    block's arrival and deadline unchanged and the pass counted as its verification time,
    not its queueing (``Session.parts_s``; the real server's scheduler does the same);
    ``False`` for a whole pass."""
    entry = s.pending
    assert entry is not None
    context = s.request.num_prompt_tokens + s.committed
    if entry.num_cached_tokens + entry.num_new_tokens >= context + s.sent:
        return False
    s.parts_s += pass_s
    server.store_part(s.index, entry.num_cached_tokens + entry.num_new_tokens)
    server.queue.append(s)
    return True


def select_batch(
    server: ServerState,
    t: float,
    policy: BatchingPolicy,
    limits: tuple[BatchLimits, BatchLimits],
    rule: DeadlineRule = "pace",
) -> list[Session]:
    """The sessions ``policy`` puts in the next batch, removed from ``server.queue``;
    ``limits`` = (normal, forced), forced when every active session is queued (nothing
    else in flight, so the policy must choose something).

    Each queued block's :class:`PendingVerification` is built once and kept on its
    session (``Session.pending``, where the dispatch reads the chosen blocks' sizes; the
    next block, with another ``entry_id``, gets its own) while it waits. Only its KV can
    change meanwhile (LRU
    eviction by another session's pass: ``num_cached_tokens`` drops to 0), so an entry
    whose resident KV differs from its ``num_cached_tokens`` is rebuilt; every other
    field is fixed from the block's arrival until its batch."""
    queue = server.queue
    kv_get = server.kv.get
    by_id: dict[int, PendingVerification] = {}
    for s in queue:
        entry = s.pending
        cached = kv_get(s.index, 0)
        if entry is None or entry.entry_id != s.entry_id or entry.num_cached_tokens != cached:
            entry = s.pending = pending_entry(s, cached, rule, server)
        by_id[entry.entry_id] = entry
    pending = (*by_id.values(),)  # queue order; a tuple: the policy cannot change it
    limit = limits[server.num_active == len(queue)]
    entry_ids = decide_batch(policy, pending, t, limit, by_id)
    if not entry_ids:
        return []
    if len(entry_ids) == len(queue):
        server.queue = []
        if entry_ids == tuple(by_id):  # the whole queue, in its order
            return queue
        taken = dict(zip(by_id, queue, strict=True))
    else:
        chosen_ids = set(entry_ids)
        taken = {}
        rest: list[Session] = []
        for s in queue:
            if s.entry_id in chosen_ids:
                taken[s.entry_id] = s
            else:
                rest.append(s)
        server.queue = rest
    return [taken[i] for i in entry_ids]
