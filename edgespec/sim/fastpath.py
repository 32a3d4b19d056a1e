"""The fast path's specialised BATCH_END handler (distributed mode, static window).

It does exactly what :meth:`Engine._batch_end` followed by ``DELIVER`` →
``_begin_round`` → ``DRAFT_DONE`` → ``_uplink`` do, in the same order and with the same
floating-point expressions, but in one closure with everything it touches bound to
locals, and without the intermediate events. ``tests/sim/test_fast_path.py`` checks that
records are identical to the straightforward path's.
"""

from __future__ import annotations

from math import log
from typing import TYPE_CHECKING

from edgespec.core.types import BatchRecord
from edgespec.sim.cost_models import decode_steps_s
from edgespec.sim.entities import ServerState
from edgespec.sim.kernel import Handler
from edgespec.sim.network import HEADER_BYTES, PROB_BYTES, TOKEN_ID_BYTES

if TYPE_CHECKING:
    from edgespec.sim.engine import Engine


def static_distributed_batch_end(
    engine: Engine, arrive_kind: int, deliver_kind: int, dispatch_kind: int
) -> Handler:
    """BATCH_END for a distributed run with a static window (γ) and no round records."""
    gamma_static = engine.static_gamma
    assert gamma_static is not None and engine.distributed and not engine.record_rounds
    accepted = engine.acceptance.accepted
    sink_batch = engine.sink.batch
    draft_times = engine.draft_times
    send_probs = engine.send_probs
    push = engine.q.push

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
            num_acc = accepted(s.seq, s.committed, gamma, rng) if gamma > 0 else 0
            committed = num_acc + 1
            total = s.committed + committed
            s.committed = total
            s.num_rounds += 1
            s.num_drafted += gamma
            s.num_accepted += num_acc
            s.last_accepted = num_acc
            s.recent.append((gamma, num_acc))
            s.queue_s += start - s.enqueued_s
            s.verify_s += verify
            link = dev.link
            # Link.latency_s, inline (same expressions, same draws).
            down = (
                0.5 * link.rtt_s
                + (HEADER_BYTES + TOKEN_ID_BYTES * (1 + committed)) / link.bandwidth_bytes_per_s
            )
            if link.jitter_s > 0:
                down += -link.jitter_s * log(1.0 - rng.next())
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
            # Engine._begin_round with a static window, inline.
            s.gamma = gamma_static
            gamma = gamma_static if gamma_static < remaining - 1 else remaining - 1
            s.gamma_eff = gamma
            context = prompt + total
            cost = dev.draft_cost
            key = (id(cost), gamma, context, 0)
            draft = draft_times.get(key)
            if draft is None:
                draft = decode_steps_s(cost, gamma, context, 0)
                draft_times[key] = draft
            s.round_start_s = deliver
            s.round_draft_s = draft
            s.draft_s += draft
            size = HEADER_BYTES + TOKEN_ID_BYTES * gamma
            if send_probs:
                size += PROB_BYTES * gamma * dev.vocab_size
            up = 0.5 * link.rtt_s + size / link.bandwidth_bytes_per_s
            if link.jitter_s > 0:
                up += -link.jitter_s * log(1.0 - rng.next())
            if link.loss_rate > 0:
                while rng.next() < link.loss_rate:
                    up += link.retransmit_timeout_s
            s.round_up_s = up
            s.network_s += up
            push((deliver + draft) + up, arrive_kind, dev.device_id, s)
        engine.num_rounds += len(batch)
        if server.queue and not server.dispatch_pending:
            server.dispatch_pending = True
            push(t, dispatch_kind, server.server_id, server)

    return batch_end
