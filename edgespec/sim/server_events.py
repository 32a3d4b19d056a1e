"""The straightforward path's server handlers (the fast path's are
:func:`~edgespec.sim.fastpath.fcfs_dispatch` and
:func:`~edgespec.sim.batchend.distributed_batch_end`, which must give the same records):

* DISPATCH asks the batching policy which queued blocks run together
  (:func:`~edgespec.sim.choice.select_batch`) and schedules the batch's end;
* BATCH_END gives every block of the batch its verdict (accepted tokens, the downlink,
  the window history, the round record) and begins the session's next round on its device
  (or ends the request, or hands a fused round to :mod:`edgespec.sim.fused_run`).

Each is a closure over the :class:`~edgespec.sim.engine.Simulation` whose state it reads
and changes, with the event kinds it schedules passed in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgespec.core.types import BatchRecord, RoundRecord
from edgespec.sim import inbound
from edgespec.sim.choice import round_deadline_s, select_batch
from edgespec.sim.entities import ServerState
from edgespec.sim.kernel import Handler
from edgespec.sim.network import downlink_bytes

if TYPE_CHECKING:
    from edgespec.sim.engine import Simulation


def dispatch_handler(engine: Simulation, batch_end_kind: int, arrive_kind: int) -> Handler:
    """DISPATCH: ask the batching policy (the fast path inlines FCFS instead)."""

    def dispatch(t: float, server: ServerState) -> None:
        server.dispatch_pending = False
        engine.touch(server)
        if engine.lazy:
            inbound.drain(server, t)
        if server.busy or not server.queue:
            return
        chosen = select_batch(
            server,
            t,
            engine.policies.batching,
            engine.limits[server.server_id],
            engine.deadline_rule,
        )
        if not chosen:
            if engine.lazy:  # the next arrival finds it idle
                inbound.arm(engine, server, arrive_kind)
            return
        n_lin = n_int = n_cached = 0
        for s in chosen:
            entry = s.pending  # what the policy chose (select_batch)
            assert entry is not None
            new, cached = entry.num_new_tokens, entry.num_cached_tokens
            n_lin += new
            n_int += (cached + new) * new
            n_cached += cached
        duration = server.cost.batch_time_s(len(chosen), n_lin, n_int, n_cached)
        if engine.may_fuse:  # the co-located draft's passes for fused entries come first
            duration = engine.fused_runs.draft_step_s(server, chosen) + duration
        server.busy = True
        server.batch = chosen
        server.batch_start_s = t
        server.batch_new = n_lin
        server.batch_cached = n_cached
        engine.q.push(t + duration, batch_end_kind, server.server_id, server)

    return dispatch


def batch_end_handler(engine: Simulation, deliver_kind: int, dispatch_kind: int) -> Handler:
    """BATCH_END: every block's verdict, then its session's next round (module docstring)."""

    def batch_end(t: float, server: ServerState) -> None:
        batch = server.batch
        start = server.batch_start_s
        server.busy = False
        server.batch = []
        engine.touch(server)
        engine.sink.batch(
            BatchRecord(
                server.server_id, start, t, len(batch), server.batch_new, server.batch_cached
            )
        )
        verify = t - start
        accepted = engine.acceptance.accepted
        distributed = engine.distributed
        depth = len(server.queue)  # reported with the verdict (the loop leaves it alone)
        record_rounds = engine.record_rounds
        hops = engine.hops
        begin_round = engine.begin_round
        rule = engine.deadline_rule
        for s in batch:
            dev = s.device
            gamma = s.gamma_eff
            tree = s.tree
            position = s.committed
            deadline = round_deadline_s(s, rule) if record_rounds else None
            request = s.request
            output = request.num_output_tokens
            if tree is not None and gamma and s.num_rounds < len(tree[0]) and not s.fused:
                num_acc = tree[0][s.num_rounds][1]  # as captured
            elif s.pre_accepted is not None:
                num_acc = s.pre_accepted  # drawn with the stop predictor's decisions
            else:
                num_acc = accepted(s.seq, position, gamma, dev.rng) if gamma > 0 else 0
            committed = min(num_acc + 1, output - position)
            total = s.committed = position + committed
            rounds = s.num_rounds = s.num_rounds + 1
            s.num_drafted += s.sent
            s.num_accepted += num_acc
            s.num_positions += gamma
            queued = start - s.enqueued_s
            s.queue_s += queued
            if s.fused:
                verdict = (num_acc, committed, queued, verify, depth, len(batch))
                engine.fused_runs.verdict(server, s, t, verdict, deadline)
                continue
            s.verify_s += verify
            done = total >= output
            down = 0.0
            if distributed or rounds == 1 or done:
                down = dev.link.latency_s(downlink_bytes(committed), dev.rng)
                s.network_s += down
            deliver = t + down
            s.last_network_s = s.round_up_s + down
            if rounds == 1:
                s.first_token_s = deliver
            history = s.history  # kept when the window policy observes
            if history is not None:
                history.record_round(
                    s.gamma, gamma, num_acc, total, s.round_up_s + down, depth, deliver
                )
            if record_rounds:
                engine.sink.round(
                    RoundRecord(
                        request.request_id, rounds - 1, s.round_start_s,
                        deliver if distributed else t, s.round_draft_s, s.round_up_s,
                        queued, verify, down, s.sent, num_acc, committed, len(batch),
                        server.server_id, deadline, s.passes,
                    )
                )  # fmt: skip
            if done:
                server.release(s.index)
                server.num_active -= 1
                engine.q.push(deliver, deliver_kind, dev.device_id, s)
                continue
            server.store(s.index, request.num_prompt_tokens + total - 1)
            resume = deliver if distributed else t
            if hops:
                engine.q.push(resume, deliver_kind, dev.device_id, s)
            else:  # what the deliver_kind would do (nothing observable happens in between)
                begin_round(s, resume)
        engine.num_rounds += len(batch)
        if server.queue and not server.dispatch_pending:
            server.dispatch_pending = True
            engine.q.push(t, dispatch_kind, server.server_id, server)

    return batch_end
