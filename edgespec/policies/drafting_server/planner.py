"""The pipeline planner (Zhu et al., seed 001, problem P, Eq. 24): batching, speculation
length and uplink bandwidth for K known tasks, and the paper's baselines as named
configurations of the same object.

P is split as the paper does: the bandwidth split (P1) does not depend on the rest, so it
is Eq. 27 (or the uniform baseline); for each speculation length l = 1..l_max (P3,
Eq. 33) the batching rule (P2: Algorithm 1, or a baseline rule) gives batches and their
T_inf; the plan keeps the l with the least T_inf. The planner assumes every task
produces O tokens, O = ``output_len`` or the longest bound among the tasks (the paper's
O_max); :mod:`edgespec.policies.drafting_server.latency` evaluates a plan with the tasks' own
lengths (Eq. 8, shrinking active sets).

Call order (both hosts): the drafting server builds a :class:`PipelineObservation` with
:func:`observe_tasks` once its users' requests are known, calls
:meth:`PipelinePlanner.plan` once, splits the uplink by ``plan.shares``, and then runs
``plan.batches`` in order, step by step, drafting ``plan.spec_len`` tokens per round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from edgespec.config import as_written
from edgespec.policies.drafting_server.bandwidth import (
    optimal_shares,
    uniform_shares,
    upload_bits_per_token,
    upload_time_s,
)
from edgespec.policies.drafting_server.batching import (
    chunks,
    dp_batches,
    heuristic_batches,
    length_order,
    max_batches,
    memory_cap,
    memory_problem,
)
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import Batches, PipelineTask, inference_latency_s
from edgespec.policies.params import MAX_GAMMA, PolicyParamError

BatchingRule = Literal["dp", "max", "static", "heuristic", "none"]
BATCHING_RULES: tuple[str, ...] = ("dp", "max", "static", "heuristic", "none")
BandwidthRule = Literal["optimal", "uniform"]
MAX_OUTPUT_LEN = 32_768
"""The largest ``output_len`` (O) a planner plans for: the DP keeps per-step tables of
⌈O / l⌉ columns per task (O = 10**9 asked numpy for 87 GiB)."""


@dataclass(frozen=True, slots=True)
class PipelineObservation:
    """What the planner sees: the tasks (lengths and uplink quality) and the band B."""

    tasks: tuple[PipelineTask, ...]
    bandwidth_hz: float

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ValueError("a pipeline plan needs at least one task")
        if self.bandwidth_hz <= 0:
            raise ValueError(f"bandwidth must be > 0 Hz, got {self.bandwidth_hz}")


def observe_tasks(
    input_lens: Sequence[int],
    output_lens: Sequence[int],
    spectral_efficiencies: Sequence[float],
    bandwidth_hz: float,
) -> PipelineObservation:
    """The shared input builder: one :class:`PipelineTask` per user, in arrival order."""
    if not len(input_lens) == len(output_lens) == len(spectral_efficiencies):
        raise ValueError(
            f"one input length, output bound and efficiency per user: got "
            f"{len(input_lens)}, {len(output_lens)}, {len(spectral_efficiencies)}"
        )
    tasks = tuple(
        PipelineTask(i, o, e)
        for i, o, e in zip(input_lens, output_lens, spectral_efficiencies, strict=True)
    )
    return PipelineObservation(tasks, bandwidth_hz)


@dataclass(frozen=True, slots=True)
class PipelinePlan:
    """Batches in processing order (task indices), the speculation length l, each user's
    bandwidth share, the T_inf the planner computed (under its output assumption) and the
    upload time T_com (Eq. 16)."""

    batches: Batches
    spec_len: int
    shares: tuple[float, ...]
    planned_inference_s: float
    upload_s: float

    @property
    def planned_total_s(self) -> float:
        """Eq. 23: T = T_inf + T_com."""
        return self.planned_inference_s + self.upload_s


@dataclass(frozen=True, slots=True)
class PipelinePlanner:
    """Zhu's scheme with the defaults; the baselines by name: ``pipelined=False`` (SD w/o
    pipeline), ``batching`` 'none' (no batching) / 'max' / 'static' / 'heuristic',
    ``spec_len=7`` (FSL), ``bandwidth='uniform'``. ``max_spec_len`` and ``spec_len`` are
    at most :data:`~edgespec.policies.window.MAX_GAMMA` (256: planning searches every l up
    to ``max_spec_len``, each a batching problem), ``output_len`` at most
    :data:`MAX_OUTPUT_LEN`."""

    costs: PipelineCosts
    batching: BatchingRule = "dp"
    pipelined: bool = True
    bandwidth: BandwidthRule = "optimal"
    max_spec_len: int = 10
    spec_len: int | None = None
    static_batch_size: int = 4
    output_len: int | None = None

    def __post_init__(self) -> None:
        if self.batching not in BATCHING_RULES:
            raise PolicyParamError(
                "batching",
                f"batching must be one of {BATCHING_RULES}, got {as_written(self.batching)}",
            )
        if self.bandwidth not in ("optimal", "uniform"):
            raise PolicyParamError(
                "bandwidth",
                f"bandwidth must be 'optimal' or 'uniform', got {as_written(self.bandwidth)}",
            )
        bounds = {"max_spec_len": MAX_GAMMA, "spec_len": MAX_GAMMA, "output_len": MAX_OUTPUT_LEN}
        for name, high in bounds.items():
            length = getattr(self, name)
            if length is not None and not 1 <= length <= high:
                raise PolicyParamError(name, f"{name} must be in [1, {high}], got {length}")
        if self.static_batch_size < 1:
            raise PolicyParamError(
                "static_batch_size", f"static_batch_size must be >= 1, got {self.static_batch_size}"
            )

    def plan(
        self, obs: PipelineObservation, progress: Callable[[int, int], None] | None = None
    ) -> PipelinePlan:
        """The plan of ``obs``'s tasks. ``progress(done, total)``: called before the first
        speculation length is planned and after each (``total``: how many it tries; each
        one batching problem, O(K²·N) under ``dp``)."""
        tasks = obs.tasks
        out = self.output_len or max(t.output_len for t in tasks)
        assumed = tuple(replace(t, output_len=out) for t in tasks)
        lengths = [self.spec_len] if self.spec_len else range(1, self.max_spec_len + 1)
        best: tuple[float, int, Batches] | None = None
        for done, spec_len in enumerate(lengths):
            if progress is not None:
                progress(done, len(lengths))
            batches, latency = self._batches(assumed, spec_len, out)
            if best is None or latency < best[0]:
                best = (latency, spec_len, batches)
        if progress is not None:
            progress(len(lengths), len(lengths))
        assert best is not None
        if problem := memory_problem(self.costs, tasks, best[2]):  # the tasks' own O_k
            raise ValueError(f"{self.batching} batching: {problem}")
        shares, upload = self._bandwidth(obs)
        return PipelinePlan(best[2], best[1], shares, best[0], upload)

    def _batches(
        self, tasks: tuple[PipelineTask, ...], spec_len: int, out: int
    ) -> tuple[Batches, float]:
        if self.batching == "dp":
            return dp_batches(self.costs, tasks, spec_len, output_len=out, pipelined=self.pipelined)
        if self.batching == "none":
            batches = chunks(length_order(tasks), 1)
        elif self.batching == "max":
            batches = max_batches(self.costs, tasks, out)
        elif self.batching == "static":
            cap = memory_cap(self.costs, tasks, out)
            batches = chunks(range(len(tasks)), min(self.static_batch_size, cap))
        else:
            cap = memory_cap(self.costs, tasks, out)
            batches = heuristic_batches(tasks, lambda b: self._latency(tasks, b, spec_len), cap)
        return batches, self._latency(tasks, batches, spec_len)

    def _latency(self, tasks: Sequence[PipelineTask], batches: Batches, spec_len: int) -> float:
        return inference_latency_s(self.costs, tasks, batches, spec_len, pipelined=self.pipelined)

    def _bandwidth(self, obs: PipelineObservation) -> tuple[tuple[float, ...], float]:
        return bandwidth_split(self.costs, obs, self.bandwidth)


def bandwidth_split(
    costs: PipelineCosts, obs: PipelineObservation, rule: BandwidthRule
) -> tuple[tuple[float, ...], float]:
    """P1: each user's share of the band (Eq. 27, or uniform) and the upload time T_com
    (Eq. 16) of the tasks' prompts, λ·I_k bits each."""
    per_token = upload_bits_per_token(costs.draft.hidden, costs.verify.hidden)
    bits = [per_token * t.input_len for t in obs.tasks]
    efficiencies = [t.spectral_efficiency for t in obs.tasks]
    shares = optimal_shares(bits, efficiencies) if rule == "optimal" else uniform_shares(len(bits))
    return shares, upload_time_s(bits, efficiencies, shares, obs.bandwidth_hz)
