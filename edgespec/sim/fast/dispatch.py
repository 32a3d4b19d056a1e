"""Specialised DISPATCH handlers and the trace-replay table of the inlining handler sets.

* :func:`fcfs_dispatch` is the reference DISPATCH
  (:meth:`~edgespec.sim.loop.server.ReferenceLoop.dispatch`) with ``FcfsBatching.select``
  inlined: the server queue is appended in event order, which is (enqueued_s, entry_id)
  order, so FCFS needs no sort and no ``PendingVerification`` objects.
* :func:`dispatch_when_alone` is the reference ARRIVE that runs the DISPATCH at once when
  no other event shares its time.

``tests/sim/test_handler_sets.py`` checks that records are identical to the reference's.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop
from sys import maxsize

from edgespec.hardware.batch_pricing import padded_batch_time_s
from edgespec.sim.events import BATCH_END, DISPATCH
from edgespec.sim.fast.inbound import Touch
from edgespec.sim.kernel import Handler
from edgespec.sim.loop.batch_choice import batch_shape
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.state import SimState

DraftStep = Callable[[ServerState, list[Session]], float]
"""The co-located draft's part of a batch step (``FusedRuns.draft_step_s``)."""


def accept_runs(seq: tuple[int, ...]) -> list[int]:
    """``runs[p]``: the number of consecutive accepted positions from ``p`` on (wrapping
    around), so that ``TraceAcceptance.accepted(seq, p, γ)`` = ``min(runs[p % n], γ)``.
    An all-accepted sequence gets ``sys.maxsize`` (larger than any window)."""
    n = len(seq)
    if all(seq):
        return [maxsize] * n
    runs = [0] * n
    run = 0
    for i in range(2 * n - 1, -1, -1):  # twice round, so every run meets its zero
        run = run + 1 if seq[i % n] else 0
        if i < n:
            runs[i] = run
    return runs


def memoised_accept_runs(
    memo: dict[int, tuple[tuple[int, ...], list[int]]], seq: tuple[int, ...]
) -> list[int]:
    """:func:`accept_runs` memoised in ``memo`` per sequence object (traces are kept alive)."""
    hit = memo.get(id(seq))
    if hit is None or hit[0] is not seq:
        hit = memo[id(seq)] = (seq, accept_runs(seq))
    return hit[1]


def dispatch_when_alone(state: SimState, touch: Touch, dispatch: Handler) -> Handler:
    """ARRIVE that dispatches at once when no other event shares its time.

    A DISPATCH scheduled at ``t`` runs after every other event at ``t`` (its kind is the
    largest). When the heap holds no event at ``t``, it would be the very next event, so
    running it now is the same and saves a heap push and pop (both heaps are
    checked: :mod:`edgespec.sim.kernel`).
    """
    push = state.q.raw_push()
    heap = state.q.heap
    arrivals = state.q.arrivals_heap

    def arrive(t: float, s: Session) -> None:
        server = s.server
        s.enqueued_s = t
        s.entry_id = server.num_enqueued
        server.num_enqueued += 1
        server.queue.append(s)
        touch(server)
        if not server.busy and not server.dispatch_pending:
            if (heap and heap[0][0] <= t) or (arrivals and arrivals[0][0] <= t):
                server.dispatch_pending = True
                push(t, DISPATCH, server.server_id, server)
            else:
                dispatch(t, server)

    return arrive


def fcfs_dispatch(
    state: SimState, touch: Touch, lazy: bool, fused_step: DraftStep | None
) -> Handler:
    """DISPATCH with ``FcfsBatching`` inlined (``_take_within_limits`` semantics).
    ``lazy``: first move the inbound blocks due (the inbound sets); ``fused_step``: the
    co-located draft's passes, when fused rounds are possible."""
    push = state.q.raw_push()

    def dispatch(t: float, server: ServerState) -> None:
        server.dispatch_pending = False
        if server.busy:
            return
        touch(server)
        queue = server.queue
        if lazy:
            inbound = server.inbound
            if inbound and inbound[0][0] <= t:  # inbound.drain, inline
                n = server.num_enqueued
                while inbound and inbound[0][0] <= t:
                    arrival_s, _, s = heappop(inbound)
                    s.enqueued_s = arrival_s
                    s.entry_id = n
                    n += 1
                    queue.append(s)
                server.num_enqueued = n
        if not queue:
            return
        chosen: list[Session] = []
        max_size, max_tokens = server.max_batch_size, server.max_batch_tokens
        max_context = server.kv_budget
        n_lin = n_int = n_cached = 0
        skipped = False
        kv_get = server.kv.get
        size = 0
        for s in queue:
            cached = kv_get(s.index, 0)
            new = s.request.num_prompt_tokens + s.committed + s.sent - cached
            if size and (n_lin + new > max_tokens or n_lin + n_cached + new + cached > max_context):
                skipped = True
                continue
            chosen.append(s)
            n_lin += new
            n_int += (cached + new) * new
            n_cached += cached
            size += 1
            if size == max_size:
                break
        server.queue = [] if size == len(queue) else _left(queue, chosen, skipped)
        server.busy, server.batch, server.batch_start_s = True, chosen, t
        server.batch_new, server.batch_cached = n_lin, n_cached
        if server.padded:  # every row padded to the longest (edgespec.hardware.batch_pricing)
            duration = padded_batch_time_s(server.cost, [batch_shape(s, server) for s in chosen])
        else:
            duration = server.cost.batch_time_s(size, n_lin, n_int, n_cached)
        if fused_step is not None:  # the co-located draft's passes for fused entries first
            duration = fused_step(server, chosen) + duration
        push(t + duration, BATCH_END, server.server_id, server)

    return dispatch


def _left(queue: list[Session], chosen: list[Session], skipped: bool) -> list[Session]:
    """What stays queued after FCFS took ``chosen``, not all of ``queue`` (``skipped``: it
    passed over some)."""
    size = len(chosen)
    if not skipped:
        return queue[size:]
    taken = {s.entry_id for s in chosen}
    return [s for s in queue if s.entry_id not in taken]
