"""Fused rounds: run on the server, drafted by its co-located draft on the engine that
verifies (``fused_rounds: colocated``, DSD §3) or not drafted at all (``cloud_only``, DSD §4.4
and DSD-Sim: the target decodes one token per pass; with ``cloud_only_draft_pass`` each
round also pays one co-located draft pass whose token is thrown away, as DSD-Sim charges).

The semantics both hosts share (docs/SIMULATOR.md "Execution modes"):

* The window policy is consulted once before every round, where the session's rounds run.
  A fused decision taken on the device (a distributed scenario's policy, or any decision in
  ``mode: fused``, where every round is fused) sends a *fused request* up: the header, plus
  the prompt's ids on the session's first round, nothing drafted (:meth:`FusedRuns.start`).
* A fused round waits in the server's queue like any block and batches with distributed
  rounds. Its draft passes run on the server's engine as part of the batch step that
  verifies it: step = the co-located draft's passes for the batch's fused entries
  (:meth:`FusedRuns.draft_step_s`) + the verification, so fused drafting delays everyone
  whose verification shares or follows that step.
* At its verdict (time t) the round's committed tokens go down (they count as output when
  they reach the device), the round enters the session's window history with
  ``fused=True`` and the policy is consulted with the observation at t
  (:meth:`FusedRuns.verdict`). Fused again: the next fused round joins the queue at t, no
  network in between. Distributed: the fused run ends and the device starts its next round
  with that decision (no second consultation) when the last fused round's tokens arrive.
* Each drafter forwards, on its first pass, the context it has not processed: the
  co-located draft the context committed since its last fused round (the whole context
  the first time), the device's draft the tokens committed during the fused run
  (:func:`~edgespec.hardware.cost_models.draft_passes_s`).
"""

from __future__ import annotations

from typing import Protocol

from edgespec.hardware.cost_models import draft_passes_s
from edgespec.policies.contracts import decide_window
from edgespec.policies.inputs import UNOBSERVED
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.sim.events import ARRIVE, DELIVER, FUSED_ALONE_END
from edgespec.sim.kernel import EventQueue
from edgespec.sim.loop.batch_choice import batch_shape
from edgespec.sim.loop.records import round_record
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.model.network import downlink_bytes, uplink_bytes
from edgespec.sim.state import SimState

MEMO_ENTRIES = 1 << 16
"""At most this many one-entry draft times memoised per run (memory, not values)."""


class FusedHost(Protocol):
    """What fused rounds need of the handler set that runs them."""

    state: SimState
    q: EventQueue

    def send_block(self, s: Session, ready_s: float) -> None: ...
    def resume_round(self, s: Session, t: float, decided: WindowDecision | None = None) -> None: ...


class FusedRuns:
    """The fused rounds of one run (the handler set calls in; see the module docstring)."""

    __slots__ = ("_memo", "host")

    def __init__(self, host: FusedHost) -> None:
        self.host = host
        # draft_passes_s of one entry by (id(cost), context, unseen, γ): a pure function
        # of them (as DraftTimes memoises decode_steps_s), so the memo's floats are its own
        self._memo: dict[tuple[int, int, int, int], float] = {}

    def run_alone(self, server: ServerState, s: Session, t: float) -> None:
        """``dsdsim_compat``'s unqueued fused round, from ``t``: no queue, no batch; its
        verdict (FUSED_ALONE_END) after its own draft passes and a one-entry verification
        of its uncached context, whatever the target is running meanwhile. Its draft part is
        kept in ``round_draft_s`` (the target's batch keeps its own in ``batch_draft_s``)."""
        s.enqueued_s = t
        new, cached = batch_shape(s, server)
        verify = server.cost.batch_time_s(1, new, (cached + new) * new, cached)
        draft = s.round_draft_s = self._passes_s(server, [s])
        self.host.q.push(t + draft + verify, FUSED_ALONE_END, server.server_id, s)

    def start(self, s: Session, t: float, decision: WindowDecision) -> None:
        """The device sends a fused request at ``t`` (``decision``: checked, fused)."""
        request = s.request
        prompt = request.num_prompt_tokens
        first = s.num_rounds == 0
        context = prompt + s.committed
        s.device_seen = 0 if first else context  # a device round came just before
        s.fused_unseen = context - s.server_seen
        s.fused = True
        _window(s, decision, self.host.state)
        s.round_start_s = t
        s.round_draft_s = 0.0
        self.host.send_block(s, t)

    def send(self, s: Session, t: float) -> None:
        """The fused request leaves the device at ``t``."""
        dev = s.device
        prompt_ids = s.request.num_prompt_tokens if s.num_rounds == 0 else 0
        up = dev.link.uplink_latency_s(uplink_bytes(0, prompt_ids, dev.vocab_size, None), dev.rng)
        s.round_up_s = up
        s.network_s += up
        self.host.q.push(t + up, ARRIVE, dev.device_id, s)

    def draft_step_s(self, server: ServerState, batch: list[Session]) -> float:
        """The co-located draft's part of the batch step: the passes of its fused entries,
        drafted together (max γ passes, pass k batching those with γ > k); 0 without. A
        ``cloud_only`` round drafts nothing, or one wasted pass with
        ``cloud_only_draft_pass``. Kept in ``server.batch_draft_s`` for the verdicts."""
        server.batch_draft_s = self._passes_s(server, batch)
        return server.batch_draft_s

    def _passes_s(self, server: ServerState, batch: list[Session]) -> float:
        """The co-located draft's passes for ``batch``'s fused entries (:meth:`draft_step_s`)."""
        state = self.host.state
        if state.cloud_only and not state.cloud_only_draft_pass:
            return 0.0
        gamma_of = _wasted_pass if state.cloud_only else _drafted
        drafts = [
            (s.request.num_prompt_tokens + s.committed, s.fused_unseen, gamma_of(s))
            for s in batch
            if s.fused and s.index not in server.in_parts  # drafted before its first part
        ]
        if not drafts:
            return 0.0
        cost = server.draft_cost
        assert cost is not None, "build_entities gives servers a co-located draft"
        if len(drafts) > 1:
            return draft_passes_s(cost, drafts)
        context, unseen, gamma = drafts[0]  # one entry: most fused rounds, memoised
        key = (id(cost), context, unseen, gamma)
        memo = self._memo
        found = memo.get(key)
        if found is None:
            found = draft_passes_s(cost, drafts)
            if len(memo) < MEMO_ENTRIES:
                memo[key] = found
        return found

    def verdict(
        self,
        server: ServerState,
        s: Session,
        t: float,
        verdict: tuple[int, int, float, float, int, int],
        deadline: float | None,
    ) -> None:
        """A fused round's verdict at ``t``; ``verdict`` = (accepted, committed, queued,
        step, queue depth, batch size). The engine has counted the tokens and the queue
        time; the step's draft part is the round's draft time, the rest its verify time."""
        num_acc, committed, queued, step, depth, batch_size = verdict
        state = self.host.state
        total = s.committed
        draft = s.round_draft_s if state.unqueued_fused else server.batch_draft_s
        verify = step - draft
        s.draft_s += draft
        s.verify_s += verify
        deliver, down = _delivered(s, t, committed)
        s.server_seen = s.request.num_prompt_tokens + total
        s.last_network_s = s.round_up_s + down
        obs = UNOBSERVED
        history = s.history  # kept when the policy observes
        if history is not None:  # the server holds the history during a fused run
            obs = history.record_round(
                s.gamma, s.gamma_eff, num_acc, total, s.last_network_s, depth, t, True
            )
        if state.record_rounds:
            state.sink.round(
                round_record(
                    s.request.request_id, s.num_rounds - 1, s.round_start_s, deliver, draft,
                    s.round_up_s, queued, verify, down, s.sent, num_acc, committed,
                    batch_size, server.server_id, deadline, s.passes, True,
                )
            )  # fmt: skip
        self._next(server, s, t, deliver, obs)

    def _next(
        self, server: ServerState, s: Session, t: float, deliver: float, obs: WindowObservation
    ) -> None:
        """After a fused round's verdict: the request ends when its tokens arrive, or the
        policy, asked with ``obs``, runs the next round fused (queued at once) or ends the
        fused run (the device's next round begins at ``deliver`` with that decision)."""
        host = self.host
        state = host.state
        total = s.committed
        prompt = s.request.num_prompt_tokens
        if total >= s.request.num_output_tokens:
            server.release(s.index)
            server.num_active -= 1
            host.q.push(deliver, DELIVER, s.device.device_id, s)
            return
        server.store(s.index, prompt + total - 1)
        decision = decide_window(state.window, obs)
        if decision.fused or state.fused_mode:  # the next fused round, queued at once
            _window(s, decision, state)
            s.fused_unseen = 0
            s.round_start_s = s.enqueued_s = t
            s.round_up_s = s.round_draft_s = 0.0
            if state.unqueued_fused:
                self.run_alone(server, s, t)
                return
            s.entry_id = server.num_enqueued
            server.num_enqueued += 1
            server.queue.append(s)
            return
        s.fused = False
        s.catch_up = prompt + total - s.device_seen
        host.resume_round(s, deliver, decision)


def _delivered(s: Session, t: float, committed: int) -> tuple[float, float]:
    """(delivery time, downlink time) of a fused round's ``committed`` tokens sent down at
    ``t``, in order: not before the last fused round's; kept in the session's network
    time (and the first token's time)."""
    dev = s.device
    down = dev.link.latency_s(downlink_bytes(committed), dev.rng)
    deliver = t + down
    if deliver < s.fused_deliver_s:  # in order: not before the last fused round's
        deliver = s.fused_deliver_s
        down = deliver - t
    s.fused_deliver_s = deliver
    s.network_s += down
    if s.num_rounds == 1:
        s.first_token_s = deliver
    return deliver, down


def _window(s: Session, decision: WindowDecision, state: SimState) -> None:
    """The fused round's window: the policy's γ capped to the tokens still to generate
    (``cloud_only``: nothing drafted, the round verifies one position and commits the
    target's own token; γ stays the decision's, as recorded)."""
    s.gamma = chosen = decision.gamma
    cap = 0 if state.cloud_only else s.request.num_output_tokens - s.committed - state.bonus
    s.gamma_eff = s.sent = chosen if chosen <= cap else cap
    s.passes = s.pre_accepted = None


def _drafted(s: Session) -> int:
    return s.gamma_eff


def _wasted_pass(s: Session) -> int:
    return 1
