"""The fast path's specialised handlers.

* :func:`static_distributed_batch_end` does exactly what :meth:`Simulation._batch_end`
  followed by ``DELIVER`` → ``_begin_round`` → ``DRAFT_DONE`` → ``_uplink`` do, in the
  same order and with the same floating-point expressions, but in one closure with
  everything it touches bound to locals, and without the intermediate events.
* :func:`fcfs_dispatch` is ``Simulation._dispatch`` with ``FcfsBatching.select`` inlined: the
  server queue is appended in event order, which is (enqueued_s, entry_id) order, so FCFS
  needs no sort and no ``PendingVerification`` objects.

``tests/sim/test_fast_path.py`` checks that records are identical to the straightforward
path's.
"""

from __future__ import annotations

from heapq import heappop, heappush
from math import log
from sys import maxsize
from typing import TYPE_CHECKING

from edgespec.core.types import BatchRecord
from edgespec.sim.cost_models import decode_steps_s
from edgespec.sim.entities import DeviceState, ServerState, Session
from edgespec.sim.kernel import Handler
from edgespec.sim.network import HEADER_BYTES, TOKEN_ID_BYTES, Link, uplink_bytes
from edgespec.sim.rng import UniformStream

if TYPE_CHECKING:
    from edgespec.sim.engine import Simulation


def fast_path_blockers(devices: list[DeviceState], servers: list[ServerState]) -> list[str]:
    """Why the fast path would not compute this run exactly (empty: it would).

    It inlines :meth:`Link.latency_s <edgespec.sim.network.Link.latency_s>`, the draws of
    :class:`~edgespec.sim.rng.UniformStream` and :class:`ServerState`'s KV LRU, so every
    device link, device stream and server must be exactly those classes (a subclass or
    another model would silently run the old formulas). Trace runs are inlined only for
    exactly :class:`~edgespec.sim.acceptance.TraceAcceptance` (see :class:`Simulation`);
    other acceptance and cost models are called, not inlined.
    """
    found: list[tuple[str, set[type], type]] = [
        ("device link", {type(d.link) for d in devices}, Link),
        ("device random stream", {type(d.rng) for d in devices}, UniformStream),
        ("server", {type(s) for s in servers}, ServerState),
    ]
    blockers = [
        f"{what} {name} is not {expected.__name__}"
        for what, kinds, expected in found
        for name in sorted(k.__name__ for k in kinds if k is not expected)
    ]
    if any(not s.prefix_cache for s in servers):  # the inlined LRU always stores
        blockers.append("a server has no prefix cache")
    return blockers


def describe_path(engine: Simulation, wanted: bool, blockers: list[str]) -> str:
    """Which event-loop path runs, and why (``edgespec sim --verbose``, the bench)."""
    if not wanted:
        return "straightforward (fast_path=false)"
    if blockers:
        return "straightforward (fast path refused: " + "; ".join(blockers) + ")"
    inlined = [
        name
        for name, on in (
            ("static window", engine.static_gamma is not None),
            ("fcfs batching", engine.fcfs_inline),
            ("jsq routing", engine.jsq_inline),
        )
        if on
    ]
    return "fast (inlined: " + (", ".join(inlined) or "no policies") + ")"


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


_DeviceConstants = tuple[
    tuple[float, ...], tuple[float, ...], dict[int, float], float, float, float
]


def _device_constants(dev: DeviceState, gamma_max: int, send_probs: bool) -> _DeviceConstants:
    """Downlink latency by committed count and uplink latency by γ without jitter and
    loss (``Link.latency_s``'s expression: the same floats), a draft-time memo, and the
    link's negated jitter, loss rate and retransmission timeout."""
    link = dev.link
    rtt, bw = link.rtt_s, link.bandwidth_bytes_per_s
    down_base = tuple(
        0.5 * rtt + (HEADER_BYTES + TOKEN_ID_BYTES * (1 + c)) / bw for c in range(gamma_max + 2)
    )
    up_base = tuple(
        0.5 * rtt + uplink_bytes(g, 0, dev.vocab_size, send_probs) / bw
        for g in range(gamma_max + 1)
    )
    memo: dict[int, float] = {}  # decode_steps_s by context * (gamma_max + 1) + γ
    neg_jitter_s = -link.jitter_s  # `-j * x` is `(-j) * x`: the same float
    return (down_base, up_base, memo, neg_jitter_s, link.loss_rate, link.retransmit_timeout_s)


def static_distributed_batch_end(
    engine: Simulation, dispatch: Handler, arrive_kind: int, deliver_kind: int, dispatch_kind: int
) -> Handler:
    """BATCH_END for a distributed run with a static window (γ) and no round records.

    Per device, the link's latency without jitter and loss is tabulated by message size
    (computed with the same expression as ``Link.latency_s``, so the values are the same
    floats); trace replay reads :func:`accept_runs`; ``num_accepted`` is derived when the
    request finishes (committed = accepted + rounds).
    """
    gamma_static = engine.static_gamma
    assert gamma_static is not None and engine.distributed and not engine.record_rounds
    accepted = engine.acceptance.accepted
    sink_batch = engine.sink.batch
    push = engine.q.raw_push()
    heap = engine.q.heap
    key_base = gamma_static + 1
    # One entry per (link, vocabulary, draft cost model), shared by the devices that have
    # it (pools), so the hot loop touches little memory.
    shared: dict[tuple[int, int, int], _DeviceConstants] = {}
    per_device: list[_DeviceConstants] = []
    for i, dev in enumerate(engine.devices):
        assert dev.device_id == i, "devices are indexed by id"
        key = (id(dev.link), dev.vocab_size, id(dev.draft_cost))
        if key not in shared:
            shared[key] = _device_constants(dev, gamma_static, engine.send_probs)
        per_device.append(shared[key])

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
        inbound = server.inbound
        kv_pop = kv.pop
        kv_total = server.kv_total
        kv_budget = server.kv_budget
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
            down_base, up_base, memo, neg_jitter_s, loss_rate, retransmit_s = per_device[
                dev.device_id
            ]
            request = s.request
            remaining = request.num_output_tokens - total
            # Link.latency_s, inline (same expressions, same draws).
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
                push(deliver, deliver_kind, dev.device_id, s)
                continue
            prompt = request.num_prompt_tokens
            # ServerState.store, inline (pop and re-insert = most recently used).
            kv_len = prompt + total - 1
            kv_total += kv_len - kv_pop(index, 0)
            kv[index] = kv_len
            while kv_total > kv_budget and kv:
                kv_total -= kv_pop(next(iter(kv)))
            # Simulation._begin_round with a static window, inline. (Session fields read only
            # by window observations and round records are not maintained here.)
            gamma = gamma_static if gamma_static < remaining - 1 else remaining - 1
            s.gamma_eff = s.sent = gamma
            context = prompt + total
            key = context * key_base + gamma
            draft = memo.get(key)
            if draft is None:
                draft = memo[key] = decode_steps_s(dev.draft_cost, gamma, context, 0)
            s.draft_s += draft
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
            # what the next block's deadline is built from (choice.round_deadline_s)
            s.last_network_s = s.round_up_s + down
            s.round_up_s = up
            s.round_draft_s = draft
            heappush(inbound, ((deliver + draft) + up, dev.device_id, s))  # inbound.send
        server.kv_total = kv_total
        engine.num_rounds += len(batch)
        # Not busy, no DISPATCH pending (none is scheduled while busy).
        if server.queue or (inbound and inbound[0][0] <= t):
            if heap and heap[0][0] <= t:
                server.dispatch_pending = True
                push(t, dispatch_kind, server.server_id, server)
            else:  # no other event at t: the DISPATCH would run next anyway
                dispatch(t, server)
        elif inbound and inbound[0][0] < server.wake_s:  # inbound.arm
            arrival_s, device_id, _ = inbound[0]
            server.wake_s = arrival_s
            push(arrival_s, arrive_kind, device_id, server)

    return batch_end


def dispatch_when_alone(engine: Simulation, dispatch: Handler, dispatch_kind: int) -> Handler:
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


def fcfs_dispatch(engine: Simulation, batch_end_kind: int) -> Handler:
    """DISPATCH with ``FcfsBatching`` inlined (``_take_within_limits`` semantics)."""
    push = engine.q.raw_push()
    lazy = engine.lazy

    def dispatch(t: float, server: ServerState) -> None:
        server.dispatch_pending = False
        if server.busy:
            return
        if lazy:
            inbound = server.inbound
            if inbound and inbound[0][0] <= t:  # inbound.drain, inline
                queue = server.queue
                n = server.num_enqueued
                while inbound and inbound[0][0] <= t:
                    arrival_s, _, s = heappop(inbound)
                    s.enqueued_s = arrival_s
                    s.entry_id = n
                    n += 1
                    queue.append(s)
                server.num_enqueued = n
        queue = server.queue
        if not queue:
            return
        chosen: list[Session] = []
        max_size = server.max_batch_size
        max_tokens = server.max_batch_tokens
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
        if size == len(queue):
            server.queue = []
        elif not skipped:
            server.queue = queue[size:]
        else:
            taken = {s.entry_id for s in chosen}
            server.queue = [s for s in queue if s.entry_id not in taken]
        server.busy = True
        server.batch = chosen
        server.batch_start_s = t
        server.batch_new = n_lin
        server.batch_cached = n_cached
        duration = server.cost.batch_time_s(size, n_lin, n_int, n_cached)
        push(t + duration, batch_end_kind, server.server_id, server)

    return dispatch
