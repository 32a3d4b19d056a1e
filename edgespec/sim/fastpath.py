"""The fast path's specialised handlers.

* :func:`static_distributed_batch_end` does exactly what :meth:`Engine._batch_end`
  followed by ``DELIVER`` → ``_begin_round`` → ``DRAFT_DONE`` → ``_uplink`` do, in the
  same order and with the same floating-point expressions, but in one closure with
  everything it touches bound to locals, and without the intermediate events.
* :func:`fcfs_dispatch` is ``Engine._dispatch`` with ``FcfsBatching.select`` inlined: the
  server queue is appended in event order, which is (enqueued_s, entry_id) order, so FCFS
  needs no sort and no ``PendingVerification`` objects.

``tests/sim/test_fast_path.py`` checks that records are identical to the straightforward
path's.
"""

from __future__ import annotations

from math import log
from typing import TYPE_CHECKING

from edgespec.core.types import BatchRecord
from edgespec.sim.acceptance import TraceAcceptance
from edgespec.sim.cost_models import decode_steps_s
from edgespec.sim.entities import ServerState, Session
from edgespec.sim.kernel import Handler
from edgespec.sim.network import HEADER_BYTES, PROB_BYTES, TOKEN_ID_BYTES

if TYPE_CHECKING:
    from edgespec.sim.engine import Engine


def static_distributed_batch_end(
    engine: Engine, dispatch: Handler, arrive_kind: int, deliver_kind: int, dispatch_kind: int
) -> Handler:
    """BATCH_END for a distributed run with a static window (γ) and no round records."""
    gamma_static = engine.static_gamma
    assert gamma_static is not None and engine.distributed and not engine.record_rounds
    accepted = engine.acceptance.accepted
    replay = isinstance(engine.acceptance, TraceAcceptance)
    sink_batch = engine.sink.batch
    draft_times = engine.draft_times
    send_probs = engine.send_probs
    push = engine.q.raw_push()
    heap = engine.q.heap

    def batch_end(t: float, server: ServerState) -> None:
        batch = server.batch
        start = server.batch_start_s
        server.busy = False
        server.batch = []
        sink_batch(
            BatchRecord(
                server.server_id, start, t, len(batch), server.batch_new, server.batch_cached
            )
        )
        verify = t - start
        kv = server.kv
        for s in batch:
            dev = s.device
            rng = dev.rng
            gamma = s.gamma_eff
            if gamma == 0:
                num_acc = 0
            elif replay:
                # TraceAcceptance.accepted, inline.
                seq = s.seq
                assert seq is not None
                n = len(seq)
                position = s.committed
                num_acc = gamma
                for k in range(gamma):
                    if not seq[(position + k) % n]:
                        num_acc = k
                        break
            else:
                num_acc = accepted(s.seq, s.committed, gamma, rng)
            committed = num_acc + 1
            total = s.committed + committed
            s.committed = total
            s.num_rounds += 1
            s.num_drafted += gamma
            s.num_accepted += num_acc
            s.queue_s += start - s.enqueued_s
            s.verify_s += verify
            link = dev.link
            # Link.latency_s, inline (same expressions, same draws).
            down = (
                0.5 * link.rtt_s
                + (HEADER_BYTES + TOKEN_ID_BYTES * (1 + committed)) / link.bandwidth_bytes_per_s
            )
            if link.jitter_s > 0:
                i = rng._i  # UniformStream.next, inline
                if i < len(rng._buf):
                    u = rng._buf[i]
                    rng._i = i + 1
                else:
                    u = rng.next()
                down += -link.jitter_s * log(1.0 - u)
            if link.loss_rate > 0:
                while rng.next() < link.loss_rate:
                    down += link.retransmit_timeout_s
            s.network_s += down
            deliver = t + down
            if s.num_rounds == 1:
                s.first_token_s = deliver
            request = s.request
            remaining = request.num_output_tokens - total
            if remaining <= 0:
                server.release(s.index)
                server.num_active -= 1
                push(deliver, deliver_kind, dev.device_id, s)
                continue
            prompt = request.num_prompt_tokens
            # ServerState.store, inline.
            index = s.index
            kv_len = prompt + total - 1
            server.kv_total += kv_len - kv.get(index, 0)
            kv[index] = kv_len
            kv.move_to_end(index)
            while server.kv_total > server.kv_budget and kv:
                server.kv_total -= kv.popitem(last=False)[1]
            # Engine._begin_round with a static window, inline. (Session fields read only
            # by window observations and round records are not maintained here.)
            gamma = gamma_static if gamma_static < remaining - 1 else remaining - 1
            s.gamma_eff = gamma
            context = prompt + total
            cost = dev.draft_cost
            key = (id(cost), gamma, context, 0)
            draft = draft_times.get(key)
            if draft is None:
                draft = decode_steps_s(cost, gamma, context, 0)
                draft_times[key] = draft
            s.draft_s += draft
            size = HEADER_BYTES + TOKEN_ID_BYTES * gamma
            if send_probs:
                size += PROB_BYTES * gamma * dev.vocab_size
            up = 0.5 * link.rtt_s + size / link.bandwidth_bytes_per_s
            if link.jitter_s > 0:
                i = rng._i  # UniformStream.next, inline
                if i < len(rng._buf):
                    u = rng._buf[i]
                    rng._i = i + 1
                else:
                    u = rng.next()
                up += -link.jitter_s * log(1.0 - u)
            if link.loss_rate > 0:
                while rng.next() < link.loss_rate:
                    up += link.retransmit_timeout_s
            s.network_s += up
            push((deliver + draft) + up, arrive_kind, dev.device_id, s)
        engine.num_rounds += len(batch)
        if server.queue and not server.dispatch_pending:
            if heap and heap[0][0] <= t:
                server.dispatch_pending = True
                push(t, dispatch_kind, server.server_id, server)
            else:  # no other event at t: the DISPATCH would run next anyway
                dispatch(t, server)

    return batch_end


def dispatch_when_alone(engine: Engine, dispatch: Handler, dispatch_kind: int) -> Handler:
    """ARRIVE that dispatches at once when no other event shares its time.

    A DISPATCH scheduled at ``t`` runs after every other event at ``t`` (its kind is the
    largest). When the heap holds no event at ``t``, it would be the very next event, so
    running it now is the same and saves a heap push and pop.
    """
    push = engine.q.raw_push()
    heap = engine.q.heap

    def arrive(t: float, s: Session) -> None:
        server = s.server
        s.enqueued_s = t
        s.entry_id = server.num_enqueued
        server.num_enqueued += 1
        server.queue.append(s)
        if not server.busy and not server.dispatch_pending:
            if heap and heap[0][0] <= t:
                server.dispatch_pending = True
                push(t, dispatch_kind, server.server_id, server)
            else:
                dispatch(t, server)

    return arrive


def fcfs_dispatch(engine: Engine, batch_end_kind: int) -> Handler:
    """DISPATCH with ``FcfsBatching`` inlined (``_take_within_limits`` semantics)."""
    push = engine.q.raw_push()

    def dispatch(t: float, server: ServerState) -> None:
        server.dispatch_pending = False
        queue = server.queue
        if server.busy or not queue:
            return
        chosen: list[Session] = []
        max_size = server.max_batch_size
        max_tokens = server.max_batch_tokens
        max_context = server.kv_budget
        n_lin = n_int = n_cached = 0
        skipped = False
        kv_get = server.kv.get
        for s in queue:
            if len(chosen) >= max_size:
                break
            cached = kv_get(s.index, 0)
            new = s.request.num_prompt_tokens + s.committed + s.gamma_eff - cached
            if chosen and (
                n_lin + new > max_tokens or n_lin + n_cached + new + cached > max_context
            ):
                skipped = True
                continue
            s.batch_new = new
            s.batch_cached = cached
            chosen.append(s)
            n_lin += new
            n_int += (cached + new) * new
            n_cached += cached
        if len(chosen) == len(queue):
            server.queue = []
        elif not skipped:
            server.queue = queue[len(chosen) :]
        else:
            taken = {s.entry_id for s in chosen}
            server.queue = [s for s in queue if s.entry_id not in taken]
        server.busy = True
        server.batch = chosen
        server.batch_start_s = t
        server.batch_new = n_lin
        server.batch_cached = n_cached
        duration = server.cost.batch_time_s(len(chosen), n_lin, n_int, n_cached)
        push(t + duration, batch_end_kind, server.server_id, server)

    return dispatch
