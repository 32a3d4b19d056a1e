"""What one drafted block commits (Zhu et al., seed 001, Eq. 7, and its sampled readings).

Every decoding step, each task of an active batch gets a block of l draft tokens
verified. Three acceptance modes:

* ``expected`` — the paper: every verification commits L = (1 − α^{1+l}) / (1 − α)
  tokens (Eq. 7), so a task is done after n_k = ⌈O_k / L⌉ steps (Eq. 8) and a batch after
  ⌈O_m / L⌉.
* ``iid`` — each drafted token is accepted with probability α independently (per task,
  from the task's own random stream): the accepted run plus the target's bonus token is
  committed; a task is done once it holds its O_k tokens.
* ``trace`` — each task replays a captured acceptance sequence (task k gets the pool's
  sequence k mod |pool|, wrapping around as
  :class:`edgespec.sim.model.acceptance.TraceAcceptance` does).

With a stop predictor (:class:`edgespec.sim.model.stop_model.StopModel`, WISP Eq. 25) a
session's block is cut at the first predicted rejection: it sends K_θ ≤ l tokens, its
drafting runs ``draft_passes(K_θ, l)`` iterations, and the verification commits the
accepted run of the K_θ sent tokens plus one. The stop predictor needs sampled
acceptance (``iid`` with the confusion stand-in, or ``trace`` with draft features).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import PipelineTask
from edgespec.sim.model.acceptance import AcceptanceModel, IidAcceptance, TraceAcceptance
from edgespec.sim.model.rng import UniformStream, spawn_streams
from edgespec.sim.model.stop_model import ReplayFeatures, StopModel
from edgespec.sim.setup.workload import load_trace, resolve_trace

STREAM_NAME = "pipeline-acceptance"
"""The purpose name of the per-task acceptance streams under the scenario seed."""


@dataclass(frozen=True, slots=True)
class BlockOutcome:
    """One block: draft tokens sent for verification, draft iterations run for them, and
    the tokens its verification commits (L, a float, in ``expected`` mode)."""

    num_sent: int
    num_passes: int
    num_committed: float


class OutcomeModel(Protocol):
    """Decides each block's outcome when it is drafted, and when a task is done."""

    def outcome(self, task: int, position: int) -> BlockOutcome:
        """The block task ``task`` drafts holding ``position`` committed tokens."""
        ...

    def finished(self, task: int, num_steps: int, num_committed: float) -> bool:
        """Whether the task is done after ``num_steps`` verified blocks."""
        ...

    @property
    def pass_overhead_s(self) -> float:
        """Extra SBS seconds per draft iteration (a stop predictor's, else 0)."""
        ...


@dataclass(frozen=True, slots=True)
class ExpectedOutcomes:
    """``expected``: l tokens sent, L committed, task k done after ⌈O_k / L⌉ steps."""

    spec_len: int
    tokens_per_step: float
    steps_needed: tuple[int, ...]

    def outcome(self, task: int, position: int) -> BlockOutcome:
        return BlockOutcome(self.spec_len, self.spec_len, self.tokens_per_step)

    def finished(self, task: int, num_steps: int, num_committed: float) -> bool:
        return num_steps >= self.steps_needed[task]

    @property
    def pass_overhead_s(self) -> float:
        return 0.0


def expected_outcomes(
    costs: PipelineCosts, tasks: Sequence[PipelineTask], spec_len: int
) -> ExpectedOutcomes:
    """Eq. 8 per task, n_k = ⌈O_k / L⌉ (:meth:`PipelineCosts.num_steps`)."""
    steps = tuple(costs.num_steps(t.output_len, spec_len) for t in tasks)
    return ExpectedOutcomes(spec_len, costs.tokens_per_step(spec_len), steps)


@dataclass(frozen=True, slots=True, eq=False)
class SampledOutcomes:
    """``iid`` or ``trace``: each block's accepted run drawn from ``acceptance`` (the
    task's sequence ``seqs[k]``, its stream ``streams[k]``), optionally cut by ``stop``."""

    spec_len: int
    output_lens: tuple[int, ...]
    acceptance: AcceptanceModel
    seqs: tuple[tuple[int, ...] | None, ...]
    streams: tuple[UniformStream, ...]
    stop: StopModel | None = None

    def outcome(self, task: int, position: int) -> BlockOutcome:
        seq, rng, spec_len = self.seqs[task], self.streams[task], self.spec_len
        if self.stop is None:
            accepted = self.acceptance.accepted(seq, position, spec_len, rng)
            return BlockOutcome(spec_len, spec_len, accepted + 1)
        block = self.stop.block(f"task {task}", seq, position, spec_len, self.acceptance, rng)
        if block.accepted is None:  # replayed decisions: the outcome of the tokens sent
            accepted = self.acceptance.accepted(seq, position, block.sent, rng)
        else:
            accepted = block.accepted
        return BlockOutcome(block.sent, block.passes, accepted + 1)

    def finished(self, task: int, num_steps: int, num_committed: float) -> bool:
        return num_committed >= self.output_lens[task]

    @property
    def pass_overhead_s(self) -> float:
        """The stop predictor's ``overhead_ms`` per draft iteration (WISP Table 11)."""
        return 0.0 if self.stop is None else self.stop.overhead_s


def iid_outcomes(
    tasks: Sequence[PipelineTask],
    spec_len: int,
    alpha: float,
    seed: int,
    stop: StopModel | None = None,
) -> SampledOutcomes:
    """``iid`` acceptance at rate ``alpha``, one stream per task under ``seed``."""
    return _sampled(tasks, spec_len, IidAcceptance(alpha), [None] * len(tasks), seed, stop)


def _sampled(
    tasks: Sequence[PipelineTask],
    spec_len: int,
    acceptance: AcceptanceModel,
    seqs: Sequence[tuple[int, ...] | None],
    seed: int,
    stop: StopModel | None,
) -> SampledOutcomes:
    """Sampled outcomes with one acceptance stream per task under ``seed``."""
    streams = spawn_streams(seed, STREAM_NAME, range(len(tasks)))
    output_lens = tuple(t.output_len for t in tasks)
    return SampledOutcomes(spec_len, output_lens, acceptance, tuple(seqs), tuple(streams), stop)


@dataclass(frozen=True, slots=True)
class TracePool:
    """Acceptance sequences of a trace set, and those of them with draft features (for a
    stop predictor's replay; the same sequence objects)."""

    acceptance: TraceAcceptance
    features: tuple[ReplayFeatures, ...]


def load_trace_pool(names: Sequence[str]) -> TracePool:
    """The sequences of the named traces (bundled names, e.g. ``gsm8k``, or JSONL paths),
    in file order; a ``ValueError`` (a ``ConfigError`` for a missing file) when there
    are none."""
    pool: list[tuple[int, ...]] = []
    features: list[ReplayFeatures] = []
    for name in names:
        for entry in load_trace(resolve_trace(name)):
            seq = entry.acceptance_seq
            if not seq:
                continue
            pool.append(seq)
            if entry.draft_features is not None:
                features.append(ReplayFeatures(seq, entry.draft_features, entry.rejection_features))
    if not pool:
        raise ValueError(f"traces {list(names)} hold no acceptance_seq")
    return TracePool(TraceAcceptance(tuple(pool)), tuple(features))


def trace_outcomes(
    tasks: Sequence[PipelineTask],
    spec_len: int,
    pool: TracePool,
    seed: int,
    stop: StopModel | None = None,
) -> SampledOutcomes:
    """``trace`` acceptance: task k replays ``pool``'s sequence k mod |pool|."""
    seqs = [pool.acceptance.seq_for(k) for k in range(len(tasks))]
    return _sampled(tasks, spec_len, pool.acceptance, seqs, seed, stop)
