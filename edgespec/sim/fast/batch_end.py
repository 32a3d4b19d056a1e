"""The specialised BATCH_END of the inbound handler sets (:mod:`edgespec.sim.fast.sets`):
a distributed run of plain-chain blocks (:mod:`edgespec.sim.blocks`) without round records.

:func:`distributed_batch_end` does exactly what the reference BATCH_END
(:meth:`~edgespec.sim.loop.server.ReferenceLoop.batch_end`) followed by ``begin_round`` →
``send_block`` and the next ARRIVE do, in the same order and with the same floating-point
expressions, but in closures with everything they touch bound to locals: the link, its
random stream and the server's KV LRU inlined for their exact classes
(:func:`edgespec.sim.handler_sets.inline_blockers`), and the next block put in its
server's inbound heap (:mod:`edgespec.sim.fast.inbound`) instead of an ARRIVE event. Each
closure is built by a function of its own: the batch's verdicts with each block's downlink
and next round inline (:func:`_verdicts`, one loop without calls per block) and what the
server does next (:func:`_after_batch`). The window is either

* the static γ, inlined (the ``fast`` set, for exactly ``StaticWindow``), or
* the scenario's window policy, asked every round through
  :func:`~edgespec.policies.contracts.decide_window` with the session's
  :class:`~edgespec.policies.inputs.WindowHistory` observation (or
  :data:`~edgespec.policies.inputs.UNOBSERVED` for a policy that declares it reads none);
  the queue depth it reports is the queue as the ARRIVE events before this BATCH_END
  left it. A fused answer is refused (:mod:`edgespec.sim.fast.window`).

``tests/sim/test_handler_sets.py`` checks that records are identical to the reference's.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from math import log

from edgespec.hardware.cost_models import decode_steps_s
from edgespec.policies.contracts import decide_window
from edgespec.policies.inputs import UNOBSERVED
from edgespec.sim.events import ARRIVE, DELIVER, DISPATCH
from edgespec.sim.fast.inbound import Touch
from edgespec.sim.fast.link_tables import KEY_BASE, DeviceConstants, grow, per_device
from edgespec.sim.fast.window import distributed_only
from edgespec.sim.kernel import Handler
from edgespec.sim.loop.records import batch_record
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.model.inbound_queue import drain
from edgespec.sim.state import SimState

Verdicts = Callable[[list[Session], ServerState, float, float, int], int]


def distributed_batch_end(
    state: SimState,
    touch: Touch,
    observe: bool,
    gamma_static: int | None,
    dispatch: Handler | None,
) -> Handler:
    """BATCH_END without round records (see the module docstring).

    ``observe``: the window policy gets observations (else ``UNOBSERVED``);
    ``gamma_static``: the static γ, inlined (``None``: the policy is asked every round);
    ``dispatch``: the DISPATCH handler, run at once when no other event shares the batch's
    end time; ``None``: a DISPATCH event every time. Trace replay reads
    :func:`~edgespec.sim.fast.dispatch.accept_runs` (``Session.runs``).
    """
    assert state.distributed and not state.record_rounds
    tables = per_device(state, 8 if gamma_static is None else gamma_static)
    verdicts = _verdicts(state, tables, gamma_static)
    after = _after_batch(state, dispatch)
    sink_batch = state.sink.batch

    def batch_end(t: float, server: ServerState) -> None:
        batch = server.batch
        start = server.batch_start_s
        server.busy = False
        server.batch = []
        touch(server)
        sink_batch(
            batch_record(
                server.server_id, start, t, len(batch), server.batch_new, server.batch_cached
            )
        )
        depth = 0
        if observe:  # the queue the verdicts report: the ARRIVEs before t have run
            drain(server, t, False)
            depth = len(server.queue)
        state.num_committed_tokens += verdicts(batch, server, t, start, depth)
        state.num_rounds += len(batch)
        after(t, server)

    return batch_end


def _verdicts(state: SimState, tables: list[DeviceConstants], gamma_static: int | None) -> Verdicts:
    """Every block's verdict of a batch ending at ``t`` (started at ``start``): accepted
    tokens, counters, the downlink (``Link.latency_s``, inline: the same expressions and
    draws; when the round goes on and no loss draws come between, the next uplink's jitter
    is the stream's next number), the KV LRU (``ServerState.store`` and ``release``,
    inline), then the request's end or ``DeviceLoop.begin_round`` at the delivery, inline:
    the window (the static γ, or the policy asked), the draft time (memoised), the uplink
    and the block put in its server's inbound heap. One loop, no calls per block: this is
    the hot path of ``edgespec bench sim``. It returns the tokens the batch committed."""
    accepted = state.acceptance.accepted
    push = state.q.raw_push()
    draft_rows = state.draft_rows
    window = state.window
    key_base = KEY_BASE if gamma_static is None else gamma_static + 1
    listed = state.due.listed
    sent = state.due.sent

    def verdicts(
        batch: list[Session], server: ServerState, t: float, start: float, depth: int
    ) -> int:
        verify = t - start
        num_accepted = 0  # the batch's; each block commits its accepted tokens + 1
        kv, kv_total, kv_budget = server.kv, server.kv_total, server.kv_budget
        kv_pop = kv.pop
        for s in batch:
            dev = s.device
            gamma = s.gamma_eff
            position = s.committed
            runs = s.runs  # set only for trace replay
            if runs is not None:
                num_acc = runs[position % len(runs)]
                if num_acc > gamma:
                    num_acc = gamma
            else:
                num_acc = accepted(s.seq, position, gamma, dev.rng) if gamma else 0
            total = position + num_acc + 1
            s.committed = total
            num_accepted += num_acc
            rounds = s.num_rounds = s.num_rounds + 1
            s.num_drafted += gamma
            s.num_positions += gamma
            s.num_accepted += num_acc
            s.queue_s += start - s.enqueued_s
            s.verify_s += verify
            request = s.request
            remaining = request.num_output_tokens - total
            constants = tables[dev.device_id]
            down_base, up_base, memo, neg_jitter_s, loss_rate, retransmit_s = constants
            rng = dev.rng
            try:
                down = down_base[num_acc + 1]
            except IndexError:  # a policy's first window was longer than the tables
                grow(constants, dev, draft_rows, num_acc)
                down = down_base[num_acc + 1]
            up_jitter = None
            if neg_jitter_s < 0:  # jitter_s > 0
                i = rng.index  # UniformStream.next, inline
                buf = rng.buffer
                if remaining > 0 and not loss_rate and i + 1 < len(buf):
                    rng.index = i + 2
                    down += neg_jitter_s * log(1.0 - buf[i])
                    up_jitter = neg_jitter_s * log(1.0 - buf[i + 1])
                else:
                    if i < len(buf):
                        u = buf[i]
                        rng.index = i + 1
                    else:
                        u = rng.next()
                    down += neg_jitter_s * log(1.0 - u)
            if loss_rate > 0:
                while rng.next() < loss_rate:
                    down += retransmit_s
            deliver = t + down
            if rounds == 1:
                s.first_token_s = deliver
            index = s.index
            if remaining <= 0:
                s.network_s += down
                kv_total -= kv_pop(index, 0)
                server.num_active -= 1
                push(deliver, DELIVER, dev.device_id, s)
                continue
            kv_len = request.num_prompt_tokens + total - 1  # pop, re-insert: most recent
            kv_total += kv_len - kv_pop(index, 0)
            kv[index] = kv_len
            while kv_total > kv_budget and kv:
                kv_total -= kv_pop(next(iter(kv)))
            # The next round (DeviceLoop.begin_round at the delivery).
            if gamma_static is not None:
                chosen = gamma_static
            else:  # the policy asked with the observation at the delivery
                history = s.history
                obs = (
                    UNOBSERVED
                    if history is None
                    else history.record_round(
                        s.gamma, s.gamma_eff, num_acc, total, s.round_up_s + down, depth, deliver
                    )
                )
                decision = decide_window(window, obs)
                if decision.fused:
                    distributed_only(window, decision)
                chosen = s.gamma = decision.gamma
            gamma = chosen if chosen < remaining - 1 else remaining - 1
            s.gamma_eff = s.sent = gamma
            context = request.num_prompt_tokens + total
            key = context * key_base + gamma
            draft = memo.get(key)
            if draft is None:
                draft = memo[key] = decode_steps_s(dev.draft_cost, gamma, context, 0)
            s.draft_s += draft
            try:
                up = up_base[gamma]
            except IndexError:  # a policy's window longer than any before
                grow(constants, dev, draft_rows, gamma)
                up = up_base[gamma]
            if up_jitter is not None:
                up += up_jitter
            elif neg_jitter_s < 0:
                up += neg_jitter_s * log(1.0 - rng.next())
            if loss_rate > 0:
                while rng.next() < loss_rate:
                    up += retransmit_s
            s.network_s = (s.network_s + down) + up
            s.last_network_s = s.round_up_s + down  # for the next deadline (round_deadline_s)
            s.round_up_s = up
            s.round_draft_s = draft
            arrival_s = (deliver + draft) + up
            home = s.server
            heappush(home.inbound, (arrival_s, dev.device_id, s))  # inbound.send
            if arrival_s < listed[home.server_id]:
                sent(arrival_s, home.server_id)
        server.kv_total = kv_total
        return num_accepted + len(batch)

    return verdicts


def _after_batch(state: SimState, dispatch: Handler | None) -> Handler:
    """The server after its batch (not busy, no DISPATCH pending: none is scheduled while
    busy): a DISPATCH when blocks wait or are due (at once when no other event shares
    ``t`` and ``dispatch`` is given), else a WAKE at its next inbound block (inbound.arm)."""
    push = state.q.raw_push()
    heap = state.q.heap
    arrivals = state.q.arrivals_heap

    def after(t: float, server: ServerState) -> None:
        inbound = server.inbound
        if server.queue or (inbound and inbound[0][0] <= t):
            if dispatch is None or (heap and heap[0][0] <= t) or (arrivals and arrivals[0][0] <= t):
                server.dispatch_pending = True
                push(t, DISPATCH, server.server_id, server)
            else:  # no other event at t: the DISPATCH would run next anyway
                dispatch(t, server)
        elif inbound and inbound[0][0] < server.wake_s:
            arrival_s, device_id, _ = inbound[0]
            server.wake_s = arrival_s
            push(arrival_s, ARRIVE, device_id, server)

    return after
