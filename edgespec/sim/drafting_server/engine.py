"""The edge drafting server as events (Zhu et al., seed 001, §II-E, Eqs. 15–23).

Entities: K users uploading over OFDMA, the SBS (one accelerator, drafts one batch at a
time) and the MBS (one accelerator, verifies one pass at a time). Events, on
:class:`edgespec.sim.kernel.EventQueue` (ties at one time in this order):

1. ``UPLOAD`` — user k's prompt arrived: λ·I_k bits at w_k·B·e_k bit/s (Eq. 15, the plan's
   share w_k);
2. ``VERIFY_DONE`` — a verification pass ended: its blocks' tokens are committed; a batch
   whose blocks are all verified has finished its step;
3. ``DRAFT_DONE`` — the SBS finished drafting a batch (Eq. 19): its blocks go to the MBS;
4. ``DISPATCH`` — once per time at which something changed, after the rest: the SBS
   starts the next ready batch (lowest plan index), then the MBS the next pass.

Modes (:class:`SimOptions`):

* ``step_barrier`` (the paper, default): inference starts when every upload is done
  (Eq. 23); step n starts with all batches still decoding ready (M_n, Eq. 21) and ends when
  all of them are verified; the SBS drafts them back to back in plan order, the MBS
  verifies each once its draft is done and the previous one verified — Eq. 20,
  C_{n,m} = max{C^d_{n,m}, C_{n,m−1}} + T^v_{n,m}.
* ``step_barrier: false`` (our extension): a batch is ready once its own users' uploads
  are done, and again as soon as its verification is back; the SBS takes ready batches
  in plan order whenever it is free. A batch's step index (its KV lengths) is its own.
* ``pipelined: false`` (SD without pipeline [35]): the SBS drafts only while no drafted
  batch awaits verification — batch m's draft waits for batch m−1's verification.

A batch keeps its full size while any of its tasks is decoding (padding, as the paper):
a finished task's row is drafted and verified but commits nothing. Stage costs are
:mod:`.stages` (the expected L in the KV lengths) in every acceptance mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edgespec.policies.drafting_contract import check_plan
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import batch_shape
from edgespec.policies.drafting_server.planner import PipelineObservation, PipelinePlan
from edgespec.policies.slo import pace_deadline_s
from edgespec.sim.drafting_server.outcomes import BlockOutcome, OutcomeModel, expected_outcomes
from edgespec.sim.drafting_server.result import PipelineSimResult
from edgespec.sim.drafting_server.stages import StageClock
from edgespec.sim.drafting_server.uplink import upload_times_s
from edgespec.sim.drafting_server.verifier import (
    DraftBlock,
    PlanOrderVerifier,
    Verifier,
    VerifyPass,
)
from edgespec.sim.kernel import EventQueue, Handler

UPLOAD, VERIFY_DONE, DRAFT_DONE, DISPATCH = range(4)


@dataclass(frozen=True, slots=True)
class SimOptions:
    """The modes (module docstring). ``slo_tokens_per_s``: every session's token-speed
    target s, giving each block the ``pace`` deadline upload end + (committed + 1) / s
    (:func:`edgespec.policies.slo.pace_deadline_s`; ``None``: no deadlines)."""

    step_barrier: bool = True
    pipelined: bool = True
    slo_tokens_per_s: float | None = None

    def __post_init__(self) -> None:
        if self.slo_tokens_per_s is not None and not self.slo_tokens_per_s > 0:
            raise ValueError(f"slo_tokens_per_s must be > 0, got {self.slo_tokens_per_s}")


@dataclass(slots=True)
class _Batch:
    """A plan batch's state: its tasks, padded input I_m, steps done, and this step's
    draft outcomes (live tasks only) and unverified blocks."""

    index: int
    tasks: tuple[int, ...]
    input_len: int
    steps_done: int = 0
    ready: bool = False
    active: bool = True
    finish_s: float = math.nan
    outcomes: dict[int, BlockOutcome] = field(default_factory=dict)
    padded_sent: int = 0
    blocks_left: int = 0


class _Engine:
    """One run's mutable state and its event handlers."""

    def __init__(
        self,
        clock: StageClock,
        obs: PipelineObservation,
        plan: PipelinePlan,
        outcomes: OutcomeModel,
        verifier: Verifier,
        options: SimOptions,
    ) -> None:
        self.clock, self.outcomes, self.verifier, self.options = clock, outcomes, verifier, options
        tasks = obs.tasks
        self.batches = [
            _Batch(m, tuple(batch), batch_shape(tasks, batch)[0])
            for m, batch in enumerate(plan.batches)
        ]
        self.upload_s = upload_times_s(obs, plan, clock.costs)
        num_tasks = len(tasks)
        self.uploads_left = num_tasks
        self.committed = [0.0] * num_tasks
        self.task_steps = [0] * num_tasks
        self.done = [False] * num_tasks
        self.finish_s = [math.nan] * num_tasks
        self.queue = EventQueue()
        self.sbs_busy = self.mbs_busy = self.dispatch_due = False
        self.sbs_busy_s = self.mbs_busy_s = 0.0
        self.first_draft_s = math.nan
        self.in_flight = 0  # drafted batches not yet fully verified
        self.step_left = 0
        self.step_start_s = 0.0
        self.step_durations: list[float] = []
        self.num_passes = self.num_blocks = self.misses = self.next_entry = 0

    def run(self) -> PipelineSimResult:
        for k, time_s in enumerate(self.upload_s):
            self.queue.push(time_s, UPLOAD, k, k)
        handlers: list[Handler] = [
            self.on_upload,
            self.on_verify_done,
            self.on_draft_done,
            self.on_dispatch,
        ]
        self.queue.run(handlers, math.inf)
        if not all(self.done) or len(self.verifier):
            raise RuntimeError("pipeline simulation stopped with work left (a scheduling bug)")
        return PipelineSimResult(
            makespan_s=self.queue.now_s,
            upload_s=max(self.upload_s),
            inference_start_s=self.first_draft_s,
            batch_steps=tuple(b.steps_done for b in self.batches),
            batch_finish_s=tuple(b.finish_s for b in self.batches),
            task_finish_s=tuple(self.finish_s),
            task_tokens=tuple(self.committed),
            step_durations_s=tuple(self.step_durations),
            sbs_busy_s=self.sbs_busy_s,
            mbs_busy_s=self.mbs_busy_s,
            num_events=self.queue.num_events,
            num_passes=self.num_passes,
            num_blocks=self.num_blocks,
            deadline_misses=self.misses,
        )

    def schedule_dispatch(self, now_s: float) -> None:
        if not self.dispatch_due:
            self.dispatch_due = True
            self.queue.push(now_s, DISPATCH, 0, None)

    def on_upload(self, now_s: float, task: Any) -> None:
        self.uploads_left -= 1
        if self.options.step_barrier:
            if self.uploads_left == 0:
                self.start_step(now_s)
        else:
            for batch in self.batches:
                if task in batch.tasks and all(self.upload_s[k] <= now_s for k in batch.tasks):
                    batch.ready = True
        self.schedule_dispatch(now_s)

    def start_step(self, now_s: float) -> None:
        """Step barrier: every batch still decoding takes part (M_n, Eq. 21)."""
        active = [b for b in self.batches if b.active]
        for batch in active:
            batch.ready = True
        self.step_left = len(active)
        self.step_start_s = now_s

    def on_dispatch(self, now_s: float, payload: Any) -> None:
        self.dispatch_due = False
        self.start_draft(now_s)
        self.start_verify(now_s)

    def start_draft(self, now_s: float) -> None:
        """The SBS takes the ready batch of lowest plan index (Eq. 19)."""
        if self.sbs_busy or (not self.options.pipelined and self.in_flight > 0):
            return
        batch = next((b for b in self.batches if b.ready), None)
        if batch is None:
            return
        batch.ready = False
        live = [k for k in batch.tasks if not self.done[k]]
        batch.outcomes = {k: self.outcomes.outcome(k, int(self.committed[k])) for k in live}
        batch.padded_sent = max(o.num_sent for o in batch.outcomes.values())
        passes = max(o.num_passes for o in batch.outcomes.values())
        step = batch.steps_done + 1
        duration = self.clock.draft_s(batch.input_len, step, len(batch.tasks), passes)
        duration += passes * self.outcomes.pass_overhead_s
        self.sbs_busy = True
        self.sbs_busy_s += duration
        if math.isnan(self.first_draft_s):
            self.first_draft_s = now_s
        self.queue.push(now_s + duration, DRAFT_DONE, batch.index, batch)

    def on_draft_done(self, now_s: float, batch: Any) -> None:
        self.sbs_busy = False
        step = batch.steps_done + 1
        blocks = [self.block(batch, k, step, now_s) for k in batch.tasks]
        batch.blocks_left = len(blocks)
        self.in_flight += 1
        self.verifier.enqueue(blocks)
        self.schedule_dispatch(now_s)

    def block(self, batch: _Batch, task: int, step: int, now_s: float) -> DraftBlock:
        outcome = batch.outcomes.get(task)
        sent = batch.padded_sent if outcome is None else outcome.num_sent
        deadline = None
        speed = self.options.slo_tokens_per_s
        if speed is not None and outcome is not None:
            deadline = pace_deadline_s(self.upload_s[task], int(self.committed[task]), speed)
        self.next_entry += 1
        return DraftBlock(
            self.next_entry, task, batch.index, step, batch.input_len, sent, now_s, deadline
        )

    def start_verify(self, now_s: float) -> None:
        """The MBS's next pass; the verifier may wait unless the SBS is idle."""
        if self.mbs_busy:
            return
        found = self.verifier.next_pass(now_s, force=not self.sbs_busy)
        if found is None:
            return
        self.mbs_busy = True
        self.mbs_busy_s += found.duration_s
        self.num_passes += 1
        self.queue.push(now_s + found.duration_s, VERIFY_DONE, 0, found)

    def on_verify_done(self, now_s: float, done: Any) -> None:
        self.mbs_busy = False
        verified: VerifyPass = done
        for block in verified.blocks:
            self.num_blocks += 1
            if block.deadline_s is not None and now_s > block.deadline_s:
                self.misses += 1
            batch = self.batches[block.batch]
            self.commit(batch, block.task, now_s)
            batch.blocks_left -= 1
            if batch.blocks_left == 0:
                self.end_batch_step(batch, now_s)
        self.schedule_dispatch(now_s)

    def commit(self, batch: _Batch, task: int, now_s: float) -> None:
        outcome = batch.outcomes.get(task)
        if outcome is None:  # a finished task's padding row
            return
        self.committed[task] += outcome.num_committed
        self.task_steps[task] += 1
        if self.outcomes.finished(task, self.task_steps[task], self.committed[task]):
            self.done[task] = True
            self.finish_s[task] = now_s

    def end_batch_step(self, batch: _Batch, now_s: float) -> None:
        batch.steps_done += 1
        self.in_flight -= 1
        batch.active = not all(self.done[k] for k in batch.tasks)
        if not batch.active:
            batch.finish_s = now_s
        if not self.options.step_barrier:
            batch.ready = batch.active
            return
        self.step_left -= 1
        if self.step_left == 0:
            self.step_durations.append(now_s - self.step_start_s)
            if any(b.active for b in self.batches):
                self.start_step(now_s)


def simulate_pipeline(
    costs: PipelineCosts,
    obs: PipelineObservation,
    plan: PipelinePlan,
    *,
    options: SimOptions | None = None,
    outcomes: OutcomeModel | None = None,
    verifier: Callable[[StageClock], Verifier] | None = None,
) -> PipelineSimResult:
    """Run ``plan`` for the tasks of ``obs`` (their own output lengths O_k).

    ``outcomes``: the acceptance mode (default ``expected``, Eq. 7; a sampled model's
    streams advance, so give each run its own). ``verifier``: builds the MBS's schedule
    from the run's :class:`StageClock` (default the plan's order, Eq. 18). Checked first.
    """
    plan = check_plan(plan, len(obs.tasks))
    clock = StageClock(costs, plan.spec_len)
    if outcomes is None:
        outcomes = expected_outcomes(costs, obs.tasks, plan.spec_len)
    schedule = PlanOrderVerifier(clock) if verifier is None else verifier(clock)
    engine = _Engine(clock, obs, plan, outcomes, schedule, options or SimOptions())
    return engine.run()
