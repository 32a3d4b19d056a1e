"""The reference round, server side, and the reference handler set itself.

* DISPATCH asks the batching policy which queued blocks run together
  (:func:`~edgespec.sim.loop.batch_choice.select_batch`) and schedules the batch's end;
* BATCH_END gives every block of the batch its verdict (accepted tokens, the downlink,
  the window history, the round record) and begins the session's next round on its device
  (or ends the request, or hands a fused round to :mod:`edgespec.sim.loop.fused`).

:class:`ReferenceLoop` is what ``fast_path: false`` runs, whatever records are kept, and
what docs/SIMULATOR.md describes; every other handler set
(:mod:`edgespec.sim.handler_sets`) must produce the same records.
"""

from __future__ import annotations

from collections.abc import Iterator

from edgespec.hardware.batch_pricing import padded_batch_time_s
from edgespec.sim.events import BATCH_END, DELIVER, DISPATCH
from edgespec.sim.kernel import Handler
from edgespec.sim.loop.batch_choice import requeue_part, round_deadline_s, select_batch
from edgespec.sim.loop.device import DeviceLoop
from edgespec.sim.loop.records import batch_record, round_record
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.model.network import downlink_bytes


class ReferenceLoop(DeviceLoop):
    """The reference handler set: every hop's time drawn where the hop begins, every policy
    called through its object and its answer checked."""

    def handlers(self) -> list[Handler]:
        """Handlers by event kind (:mod:`edgespec.sim.events`); no DRAFT_DONE events here."""
        return [
            self.batch_end,
            self.deliver,
            self.draft_done,
            self.arrive,
            self.arrivals.on_request,
            self.dispatch,
            self.fused_alone_end,
        ]

    def fused_alone_end(self, t: float, s: Session) -> None:
        """FUSED_ALONE_END: an unqueued fused round's verdict (``dsdsim_compat``)."""
        server = s.server
        self._verdict(s, server, t, s.enqueued_s, len(server.queue), 1)
        self.state.num_rounds += 1

    def draft_done(self, t: float, s: Session) -> None:
        """DRAFT_DONE: the block leaves the device (only the every-hop set schedules it)."""
        DeviceLoop.send_block(self, s, t)

    def dispatch(self, t: float, server: ServerState) -> None:
        """DISPATCH: ask the batching policy; schedule the chosen batch's end."""
        server.dispatch_pending = False
        self.touch(server)
        if server.busy or not server.queue:
            return
        state = self.state
        chosen = select_batch(
            server,
            t,
            state.policies.batching,
            state.limits[server.server_id],
            state.deadline_rule,
        )
        if not chosen:
            return
        n_lin = n_int = n_cached = 0
        for s in chosen:
            entry = s.pending  # what the policy chose (select_batch)
            assert entry is not None
            new, cached = entry.num_new_tokens, entry.num_cached_tokens
            n_lin += new
            n_int += (cached + new) * new
            n_cached += cached
        if server.padded:  # every row padded to the longest (edgespec.hardware.batch_pricing)
            duration = padded_batch_time_s(server.cost, _shapes(chosen))
        else:
            duration = server.cost.batch_time_s(len(chosen), n_lin, n_int, n_cached)
        if state.may_fuse:  # the co-located draft's passes for fused entries come first
            duration = self.fused_runs.draft_step_s(server, chosen) + duration
        server.busy = True
        server.batch = chosen
        server.batch_start_s = t
        server.batch_new = n_lin
        server.batch_cached = n_cached
        self.q.push(t + duration, BATCH_END, server.server_id, server)

    def batch_end(self, t: float, server: ServerState) -> None:
        """BATCH_END: every block's verdict, then its session's next round."""
        state = self.state
        batch = server.batch
        start = server.batch_start_s
        server.busy = False
        server.batch = []
        self.touch(server)
        state.sink.batch(
            batch_record(
                server.server_id, start, t, len(batch), server.batch_new, server.batch_cached
            )
        )
        depth = len(server.queue)  # reported with the verdict (the loop leaves it alone)
        server.running = frozenset(s.index for s in batch)  # kept longest between parts
        for s in batch:
            if server.part_tokens is not None and requeue_part(s, server, t - start):  # later
                continue
            self._verdict(s, server, t, start, depth, len(batch))
            state.num_rounds += 1
        server.running = frozenset()
        if server.queue and not server.dispatch_pending:
            server.dispatch_pending = True
            self.q.push(t, DISPATCH, server.server_id, server)

    def _verdict(
        self, s: Session, server: ServerState, t: float, start: float, depth: int, size: int
    ) -> None:
        """One block's verdict at ``t`` (``start``: its batch's start, ``depth``: the queue
        reported with it, ``size``: the batch's size): the session's block model judges it
        (:mod:`edgespec.sim.blocks`), a fused round goes to :mod:`edgespec.sim.loop.fused`,
        a drafted one's tokens go down."""
        state = self.state
        deadline = round_deadline_s(s, state.deadline_rule) if state.record_rounds else None
        num_acc, committed, extra = s.block.judge(s)
        gamma = s.gamma_eff
        s.committed += committed
        state.num_committed_tokens += committed
        s.num_rounds += 1
        s.num_drafted += s.sent
        s.num_accepted += num_acc
        s.num_positions += gamma
        queued = start - s.enqueued_s - s.parts_s  # a prefill part's pass is verification
        s.queue_s += queued
        verify = t - start + s.parts_s
        s.parts_s = 0.0
        if s.fused:
            verdict = (num_acc, committed, queued, verify, depth, size)
            self.fused_runs.verdict(server, s, t, verdict, deadline)
            return
        s.verify_s += verify
        down = self._down_s(s, committed, extra)
        deliver = t + down
        history = s.history  # kept when the window policy observes
        if history is not None:
            history.record_round(
                s.gamma, gamma, num_acc, s.committed, s.round_up_s + down, depth, deliver
            )
        if state.record_rounds:
            state.sink.round(
                round_record(
                    s.request.request_id, s.num_rounds - 1, s.round_start_s,
                    deliver if state.distributed else t, s.round_draft_s, s.round_up_s,
                    queued, verify, down, s.sent, num_acc, committed, size,
                    server.server_id, deadline, s.passes, False,
                )
            )  # fmt: skip
        self._next(s, server, t, deliver)

    def _down_s(self, s: Session, committed: int, extra: int) -> float:
        """The verdict's way down (the block model's extra hops first), drawn when it goes
        now: every round of a distributed run, a centralized run's first and last; kept
        in the session's network times (and the first token's time)."""
        done = s.committed >= s.request.num_output_tokens
        down = 0.0
        if self.state.distributed or s.num_rounds == 1 or done:
            dev = s.device
            down = s.block.extra_hops_s(s, extra) if extra else 0.0
            down += dev.link.latency_s(downlink_bytes(committed), dev.rng)
            s.network_s += down
        s.last_network_s = s.round_up_s + down
        return down

    def _next(self, s: Session, server: ServerState, t: float, deliver: float) -> None:
        """After the verdict: the request ends when its tokens are delivered, or its next
        round begins (on the device at ``deliver``; a centralized run's at ``t``)."""
        if s.num_rounds == 1:
            s.first_token_s = deliver
        request = s.request
        total = s.committed
        if total >= request.num_output_tokens:
            server.release(s.index)
            server.num_active -= 1
            self.q.push(deliver, DELIVER, s.device.device_id, s)
            return
        server.store(s.index, request.num_prompt_tokens + total - 1)
        self.resume_round(s, deliver if self.state.distributed else t)


def _shapes(chosen: list[Session]) -> Iterator[tuple[int, int]]:
    """(new, cached) of every chosen entry, as the batching policy saw it."""
    for s in chosen:
        entry = s.pending
        assert entry is not None
        yield entry.num_new_tokens, entry.num_cached_tokens
