"""The specialised BATCH_END of the inbound handler sets (:mod:`edgespec.sim.fast.sets`):
a distributed run without round records, token trees or a stop predictor.

:func:`distributed_batch_end` does exactly what the reference BATCH_END
(:meth:`~edgespec.sim.loop.server.ReferenceLoop.batch_end`) followed by ``begin_round`` →
``send_block`` and the next ARRIVE do, in the same order and with the same floating-point
expressions, but in one closure with everything it touches bound to locals: the link, its
random stream and the server's KV LRU inlined for their exact classes
(:func:`edgespec.sim.handler_sets.inline_blockers`), and the next block put in its
server's inbound heap (:mod:`edgespec.sim.fast.inbound`) instead of an ARRIVE event. The
window is either

* the static γ, inlined (the ``fast`` set, for exactly ``StaticWindow``), or
* the scenario's window policy, asked every round through
  :func:`~edgespec.policies.contracts.decide_window` with the session's
  :class:`~edgespec.policies.inputs.WindowHistory` observation (or
  :data:`~edgespec.policies.inputs.UNOBSERVED` for a policy that declares it reads none);
  the queue depth it reports is the queue as the ARRIVE events before this BATCH_END
  left it. A fused answer is refused (:func:`distributed_only`).

``tests/sim/test_handler_sets.py`` checks that records are identical to the reference's.
"""

from __future__ import annotations

from heapq import heappush
from math import log
from typing import NamedTuple

from edgespec.core.types import BatchRecord
from edgespec.hardware.cost_models import decode_steps_s
from edgespec.policies.contracts import PolicyContractError, decide_window
from edgespec.policies.inputs import UNOBSERVED
from edgespec.policies.interfaces import WindowDecision
from edgespec.sim.events import ARRIVE, DELIVER, DISPATCH
from edgespec.sim.fast.inbound import Touch
from edgespec.sim.kernel import Handler
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.model.inbound_queue import drain
from edgespec.sim.model.network import HEADER_BYTES, TOKEN_ID_BYTES, uplink_bytes
from edgespec.sim.state import SimState


class _DeviceConstants(NamedTuple):
    """What the closure reads of a device's link and draft model, shared by a pool."""

    down_base: list[float]
    """Downlink latency without jitter and loss, by committed count."""
    up_base: list[float]
    """Uplink latency without jitter and loss, by γ."""
    draft_memo: dict[int, float]
    """``decode_steps_s`` by context * key base + γ."""
    neg_jitter_s: float
    loss_rate: float
    retransmit_s: float


def distributed_only(window: object, decision: WindowDecision) -> WindowDecision:
    """``decision`` (checked) unless it is fused: the inbound handler sets run distributed
    rounds only, and run a window policy that may go fused only when its type is unknown
    (:func:`edgespec.policies.fusing.fusing`)."""
    if decision.fused:
        raise PolicyContractError(
            f"window policy {type(window).__name__} answered {decision!r}, but it does not "
            "say it may go fused, so this run takes the simulator's distributed-only "
            "handler set: give the policy a class attribute `may_fuse = True`"
        )
    return decision


_KEY_BASE = 1 << 30
"""Draft-time memo key = context * base + γ when a policy chooses γ (γ < a request's
output tokens < 2**30)."""


def _grow(tables: _DeviceConstants, dev: DeviceState, send_probs: bool, gamma: int) -> None:
    """Extend the latency tables to windows up to ``gamma``: the downlink latency by
    committed count and the uplink latency by γ, without jitter and loss
    (``Link.latency_s``'s expression: the same floats)."""
    down_base, up_base = tables[0], tables[1]
    link = dev.link
    rtt, bw, up_bw = link.rtt_s, link.bandwidth_bytes_per_s, link.up_bytes_per_s
    down_base.extend(
        0.5 * rtt + (HEADER_BYTES + TOKEN_ID_BYTES * (1 + c)) / bw
        for c in range(len(down_base), gamma + 2)
    )
    up_base.extend(
        0.5 * rtt + uplink_bytes(g, 0, dev.vocab_size, send_probs) / up_bw
        for g in range(len(up_base), gamma + 1)
    )


def _device_constants(dev: DeviceState, gamma_max: int, send_probs: bool) -> _DeviceConstants:
    """The latency tables (:func:`_grow`), a draft-time memo, and the link's negated
    jitter, loss rate and retransmission timeout."""
    link = dev.link
    memo: dict[int, float] = {}  # decode_steps_s by context * key base + γ
    neg_jitter_s = -link.jitter_s  # `-j * x` is `(-j) * x`: the same float
    tables = _DeviceConstants([], [], memo, neg_jitter_s, link.loss_rate, link.retransmit_timeout_s)
    _grow(tables, dev, send_probs, gamma_max)
    return tables


def _per_device(state: SimState, gamma_max: int) -> list[_DeviceConstants]:
    """One entry per (link, vocabulary, draft cost model), shared by the devices that have
    it (pools), so the hot loop touches little memory."""
    shared: dict[tuple[int, int, int], _DeviceConstants] = {}
    per_device: list[_DeviceConstants] = []
    for i, dev in enumerate(state.devices):
        assert dev.device_id == i, "devices are indexed by id"
        key = (id(dev.link), dev.vocab_size, id(dev.draft_cost))
        if key not in shared:
            shared[key] = _device_constants(dev, gamma_max, state.send_probs)
        per_device.append(shared[key])
    return per_device


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
    window = state.window
    key_base = _KEY_BASE if gamma_static is None else gamma_static + 1
    accepted = state.acceptance.accepted
    sink_batch = state.sink.batch
    push = state.q.raw_push()
    heap = state.q.heap
    arrivals = state.q.arrivals_heap
    send_probs = state.send_probs
    per_device = _per_device(state, 8 if gamma_static is None else gamma_static)
    due = state.due
    listed = due.listed
    sent = due.sent

    def batch_end(t: float, server: ServerState) -> None:
        batch = server.batch
        start = server.batch_start_s
        server.busy = False
        server.batch = []
        touch(server)
        server_id = server.server_id
        sink_batch(
            BatchRecord(
                server.server_id, start, t, len(batch), server.batch_new, server.batch_cached
            )
        )
        verify = t - start
        kv = server.kv
        inbound = server.inbound
        kv_pop = kv.pop
        kv_total = server.kv_total
        kv_budget = server.kv_budget
        depth = 0
        if observe:  # the queue the verdicts report: the ARRIVEs before t have run
            drain(server, t, False)
            depth = len(server.queue)
        for s in batch:
            dev = s.device
            rng = dev.rng
            gamma = s.gamma_eff
            position = s.committed
            runs = s.runs  # set only for trace replay
            if runs is not None:
                num_acc = runs[position % len(runs)]
                if num_acc > gamma:
                    num_acc = gamma
            else:
                num_acc = accepted(s.seq, position, gamma, rng) if gamma else 0
            total = position + num_acc + 1
            s.committed = total
            rounds = s.num_rounds = s.num_rounds + 1
            s.num_drafted += gamma
            s.num_positions += gamma
            s.num_accepted += num_acc
            s.queue_s += start - s.enqueued_s
            s.verify_s += verify
            tables = per_device[dev.device_id]
            down_base, up_base, memo, neg_jitter_s, loss_rate, retransmit_s = tables
            request = s.request
            remaining = request.num_output_tokens - total
            # Link.latency_s, inline (same expressions, same draws).
            try:
                down = down_base[num_acc + 1]
            except IndexError:  # a policy's first window was longer than the tables
                _grow(tables, dev, send_probs, num_acc)
                down = down_base[num_acc + 1]
            up_jitter = None
            if neg_jitter_s < 0:  # jitter_s > 0
                i = rng.index  # UniformStream.next, inline
                buf = rng.buffer
                if remaining > 0 and not loss_rate and i + 1 < len(buf):
                    # The round goes on and no loss draws come between: this round's
                    # downlink and uplink jitter are the stream's next two numbers.
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
                kv_total -= kv_pop(index, 0)  # ServerState.release, inline
                server.num_active -= 1
                push(deliver, DELIVER, dev.device_id, s)
                continue
            prompt = request.num_prompt_tokens
            # ServerState.store, inline (pop and re-insert = most recently used).
            kv_len = prompt + total - 1
            kv_total += kv_len - kv_pop(index, 0)
            kv[index] = kv_len
            while kv_total > kv_budget and kv:
                kv_total -= kv_pop(next(iter(kv)))
            # DeviceLoop.begin_round at the delivery, inline.
            if gamma_static is not None:
                chosen = gamma_static
            else:
                # The observation at the delivery, the round's start (a history is kept
                # only when the policy observes).
                history = s.history
                obs = (
                    UNOBSERVED
                    if history is None
                    else history.record_round(
                        s.gamma, gamma, num_acc, total, s.round_up_s + down, depth, deliver
                    )
                )
                decision = decide_window(window, obs)
                if decision.fused:
                    distributed_only(window, decision)
                chosen = s.gamma = decision.gamma
            gamma = chosen if chosen < remaining - 1 else remaining - 1
            s.gamma_eff = s.sent = gamma
            context = prompt + total
            key = context * key_base + gamma
            draft = memo.get(key)
            if draft is None:
                draft = memo[key] = decode_steps_s(dev.draft_cost, gamma, context, 0)
            s.draft_s += draft
            try:
                up = up_base[gamma]
            except IndexError:  # a policy's window longer than any before
                _grow(tables, dev, send_probs, gamma)
                up = up_base[gamma]
            if up_jitter is not None:
                up += up_jitter
            elif neg_jitter_s < 0:
                i = rng.index  # UniformStream.next, inline
                buf = rng.buffer
                if i < len(buf):
                    u = buf[i]
                    rng.index = i + 1
                else:
                    u = rng.next()
                up += neg_jitter_s * log(1.0 - u)
            if loss_rate > 0:
                while rng.next() < loss_rate:
                    up += retransmit_s
            s.network_s = (s.network_s + down) + up
            # what the next block's deadline is built from (batch_choice.round_deadline_s)
            s.last_network_s = s.round_up_s + down
            s.round_up_s = up
            s.round_draft_s = draft
            arrival_s = (deliver + draft) + up
            heappush(inbound, (arrival_s, dev.device_id, s))  # inbound.send
            if arrival_s < listed[server_id]:
                sent(arrival_s, server_id)
        server.kv_total = kv_total
        state.num_rounds += len(batch)
        # Not busy, no DISPATCH pending (none is scheduled while busy).
        if server.queue or (inbound and inbound[0][0] <= t):
            if dispatch is None or (heap and heap[0][0] <= t) or (arrivals and arrivals[0][0] <= t):
                server.dispatch_pending = True
                push(t, DISPATCH, server.server_id, server)
            else:  # no other event at t: the DISPATCH would run next anyway
                dispatch(t, server)
        elif inbound and inbound[0][0] < server.wake_s:  # inbound.arm
            arrival_s, device_id, _ = inbound[0]
            server.wake_s = arrival_s
            push(arrival_s, ARRIVE, device_id, server)

    return batch_end
