"""The ``pipeline:`` scenario form: Zhu et al.'s edge drafting server as one YAML file.

A scenario whose top level has a ``pipeline`` key is this form (``edgespec sim`` runs it
with :mod:`edgespec.sim.drafting_server.command`); its top level holds ``name``, ``seed`` and
``pipeline`` only. Loaded once through :func:`edgespec.config.from_dict` (overrides
``pipeline.num_users=50`` apply before validation); every error names its field, e.g.
``config field 'pipeline.planner.spec_len': must be >= 1, got 0``. Defaults are Zhu's
Table II with the (LLaMA-1.1B, LLaMA-7B) pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from edgespec.config import (
    POLICY_KIND,
    ConfigError,
    PolicySpec,
    apply_overrides,
    default_policy_names,
    from_dict,
)
from edgespec.core.wireless import WirelessCell
from edgespec.policies.drafting_server.planner import MAX_OUTPUT_LEN
from edgespec.policies.params import MAX_GAMMA
from edgespec.policies.registry import BATCHING, KINDS
from edgespec.policies.slo import token_speed_target_problem
from edgespec.sim.model.stop_model import StopPredictorConfig
from edgespec.sim.setup.workload_config import applies_only

BatchingName = Literal["dp", "max", "static", "heuristic", "none"]


@dataclass(frozen=True, slots=True)
class PlannerConfig:
    """The planner by registry ``name`` (:data:`edgespec.policies.registry.PLANNER`;
    ``zhu``: :class:`edgespec.policies.drafting_server.planner.PipelinePlanner`) and its options:
    the batching rule (Algorithm 1's ``dp`` or a baseline), ``pipelined`` (false: SD
    without pipeline, planned and simulated so), the bandwidth split (Eq. 27 or uniform),
    ``spec_len`` (a fixed l, e.g. 7 for FSL; null: the best of 1..``max_spec_len``,
    Eq. 33), the static rule's batch size, and ``output_len``, the O every task is
    planned for (null: the scenario's ``max_output_tokens``, the paper's O_max)."""

    batching: BatchingName = "dp"
    pipelined: bool = True
    bandwidth: Literal["optimal", "uniform"] = "optimal"
    spec_len: int | None = None
    max_spec_len: int = 10
    static_batch_size: int = 4
    output_len: int | None = None
    name: str = "zhu"


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """The event simulation's modes (:mod:`edgespec.sim.drafting_server.engine`,
    :mod:`edgespec.sim.drafting_server.outcomes`): the step barrier, the acceptance mode and, for
    ``trace``, the trace set (bundled names or JSONL paths)."""

    step_barrier: bool = True
    acceptance: Literal["expected", "iid", "trace"] = "expected"
    traces: tuple[str, ...] = ("gsm8k",)


@dataclass(frozen=True, slots=True)
class VerifierConfig:
    """The MBS's schedule. ``policy`` null: the plan's batch-per-pass order (Eq. 18); a
    batching policy by registry name (``fcfs``, ``lab``, ``wisp``) schedules per-session
    blocks instead, within the limits below (``wisp`` without coefficients gets Eq. 19's
    exact fit of the verify model's Eq. 14/17 cost). ``slo_tokens_per_s``: a token-speed
    target for every session (``pace`` deadlines; null: none)."""

    policy: PolicySpec | None = field(default=None, metadata={POLICY_KIND: "batching"})
    max_batch_size: int = 1024
    max_batch_tokens: int = 1 << 24
    max_context_tokens: int = 1 << 30
    slo_tokens_per_s: float | None = None


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The system: zhu profiles of the draft (SBS) and verify (MBS) stages, Γ_s in GB, α,
    K users with I_k ~ U[1, I_max] and O_k ~ U[1, O_max], the cell (uplink), the planner,
    the simulation, the verifier and an optional stop predictor on the SBS."""

    draft_profile: str = "rtx3080-tinyllama-1.1b-zhu"
    verify_profile: str = "rtx4500-llama2-7b-zhu"
    sbs_memory_gb: float = 16.0
    alpha: float = 0.8
    num_users: int = 100
    max_input_tokens: int = 512
    max_output_tokens: int = 2048
    cell: WirelessCell = field(default_factory=WirelessCell)
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    verifier: VerifierConfig = field(default_factory=VerifierConfig)
    stop_predictor: StopPredictorConfig | None = None


@dataclass(frozen=True, slots=True)
class PipelineScenario:
    """One run of the edge drafting server (module docstring)."""

    name: str = "pipeline"
    seed: int = 0
    system: Literal["drafting_server"] = "drafting_server"
    """The simulator (:mod:`edgespec.sim.setup.system`): a scenario says it, ``system:
    drafting_server``."""
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)

    def validate(self) -> None:
        if self.seed < 0:
            raise ConfigError("seed", f"must be >= 0, got {self.seed}")
        _validate_system(self.pipeline)
        _validate_planner(self.pipeline.planner)
        _validate_simulation(self.pipeline)
        _validate_verifier(self.pipeline.verifier)
        _check_used(self.pipeline)


def _at_least(where: str, value: float | None, minimum: float) -> None:
    if value is not None and not value >= minimum:
        raise ConfigError(where, f"must be >= {minimum}, got {value}")


MAX_USERS = 10_000
"""Users a drafting-server scenario may have: its planning time grows with their square
(``time edgespec sim zhu-pipeline pipeline.num_users=4000``: 20 s on a 2-core machine)."""


def _validate_system(cfg: PipelineConfig) -> None:
    if not 0 < cfg.sbs_memory_gb < math.inf:
        raise ConfigError("pipeline.sbs_memory_gb", f"must be > 0, got {cfg.sbs_memory_gb}")
    if not 0.0 <= cfg.alpha <= 1.0:
        raise ConfigError("pipeline.alpha", f"must be in [0, 1], got {cfg.alpha}")
    for name in ("num_users", "max_input_tokens", "max_output_tokens"):
        _at_least(f"pipeline.{name}", getattr(cfg, name), 1)
    if cfg.max_output_tokens > MAX_OUTPUT_LEN:  # the planner's O_max (output_len by default)
        raise ConfigError(
            "pipeline.max_output_tokens",
            f"must be <= {MAX_OUTPUT_LEN:,} (the planner's tables grow with it), "
            f"got {cfg.max_output_tokens}",
        )
    if cfg.num_users > MAX_USERS:
        raise ConfigError(
            "pipeline.num_users",
            f"must be <= {MAX_USERS:,} (planning grows with the square of the users), "
            f"got {cfg.num_users}",
        )


def _validate_planner(cfg: PlannerConfig) -> None:
    for name in ("spec_len", "max_spec_len", "static_batch_size", "output_len"):
        _at_least(f"pipeline.planner.{name}", getattr(cfg, name), 1)
    bounds = {"spec_len": MAX_GAMMA, "max_spec_len": MAX_GAMMA, "output_len": MAX_OUTPUT_LEN}
    for name, bound in bounds.items():  # the planner's bounds (PipelinePlanner)
        length = getattr(cfg, name)
        if length is not None and length > bound:
            raise ConfigError(f"pipeline.planner.{name}", f"must be <= {bound:,}, got {length}")


def _validate_simulation(cfg: PipelineConfig) -> None:
    sim = cfg.simulation
    if sim.acceptance == "trace" and not sim.traces:
        raise ConfigError("pipeline.simulation.traces", "trace acceptance needs a trace set")
    if sim.acceptance != "trace" and sim.traces != SimulationConfig().traces:
        raise ConfigError(
            "pipeline.simulation.traces",
            f"applies only to acceptance: trace (acceptance is {sim.acceptance})",
        )
    stop = cfg.stop_predictor
    if stop is None:
        return
    if sim.acceptance == "expected":
        raise ConfigError(
            "pipeline.stop_predictor",
            "needs sampled acceptance (simulation.acceptance: iid or trace); 'expected' "
            "commits L tokens per block and has no positions to stop at",
        )
    if sim.acceptance == "iid" and stop.confusion_tpr is None:
        raise ConfigError(
            "pipeline.stop_predictor",
            "iid acceptance has no draft features to replay: give confusion_tpr and confusion_fpr",
        )


def _validate_verifier(cfg: VerifierConfig) -> None:
    for name in ("max_batch_size", "max_batch_tokens", "max_context_tokens"):
        _at_least(f"pipeline.verifier.{name}", getattr(cfg, name), 1)
    if (problem := token_speed_target_problem(cfg.slo_tokens_per_s)) is not None:
        raise ConfigError("pipeline.verifier.slo_tokens_per_s", problem)


def _check_used(cfg: PipelineConfig) -> None:
    """Refuse a planner or verifier key that the chosen setting does not read: the static
    rule's batch size under another batching rule, ``max_spec_len`` beside a fixed
    ``spec_len``, the verifier's limits without a verifier policy (the plan's order)."""
    planner, was = cfg.planner, PlannerConfig()
    if planner.batching != "static":
        applies_only(
            "pipeline.planner.static_batch_size",
            planner.static_batch_size,
            was.static_batch_size,
            "batching: static",
            f"batching is {planner.batching}",
            "drop it, or set batching: static",
        )
    if planner.spec_len is not None:
        applies_only(
            "pipeline.planner.max_spec_len",
            planner.max_spec_len,
            was.max_spec_len,
            "spec_len: null, the best l of 1..max_spec_len",
            f"spec_len is {planner.spec_len}, a fixed l",
            "drop one of the two",
        )
    if cfg.verifier.policy is not None:
        return
    for name in ("max_batch_size", "max_batch_tokens", "max_context_tokens"):
        applies_only(
            f"pipeline.verifier.{name}",
            getattr(cfg.verifier, name),
            getattr(VerifierConfig(), name),
            "a verifier policy",
            "policy is null: the plan's order, one pass per batch",
            f"drop it, or name a batching policy: {sorted(BATCHING)}",
        )


def pipeline_scenario_from_dict(
    data: Mapping[str, Any], overrides: Sequence[str] = ()
) -> PipelineScenario:
    """A validated :class:`PipelineScenario` from a mapping plus ``key.path=value``
    overrides; a policy given only params is refused naming the policies of its kind
    (:func:`edgespec.config.default_policy_names`: none of its policies has a default)."""
    given = default_policy_names(PipelineScenario, apply_overrides(data, overrides), KINDS)
    return from_dict(PipelineScenario, given)
