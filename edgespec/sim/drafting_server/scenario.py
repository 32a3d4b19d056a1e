"""The ``pipeline:`` scenario form: Zhu et al.'s edge drafting server as one YAML file.

A scenario whose top level has a ``pipeline`` key is this form (``edgespec sim`` runs it
with :mod:`edgespec.sim.drafting_server.command`); its top level holds ``name``, ``seed`` and
``pipeline`` only. Loaded once through :func:`edgespec.config.from_dict` (overrides
``pipeline.num_users=50`` apply before validation); every error names its field, e.g.
``config field 'pipeline.planner.spec_len': must be >= 1, got 0``. Defaults are Zhu's
Table II with the (LLaMA-1.1B, LLaMA-7B) pair. The system and planner fields, and their
checks, are :mod:`edgespec.hardware.drafting_plan`'s, which ``edgespec drafting-server
--plan`` reads the same file with; the sections here are the simulator's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from edgespec.config import (
    POLICY_KIND,
    ConfigError,
    PolicySpec,
    applies_only,
    apply_overrides,
    default_policy_names,
    from_dict,
)
from edgespec.hardware.drafting_plan import (
    PipelineSystem,
    at_least,
    check_system,
)
from edgespec.policies.registry import BATCHING, KINDS
from edgespec.policies.slo import token_speed_target_problem
from edgespec.sim.model.stop_model import StopPredictorConfig
from edgespec.sim.setup.system import refuse_fleet_fields


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
class PipelineConfig(PipelineSystem):
    """The system and its planner (:class:`edgespec.hardware.drafting_plan.PipelineSystem`,
    which ``edgespec drafting-server --plan`` reads too), then the simulator's sections
    (:data:`edgespec.hardware.drafting_plan.SIMULATOR_SECTIONS`): the simulation, the
    verifier and an optional stop predictor on the SBS."""

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
        check_system(self.pipeline)
        _validate_simulation(self.pipeline)
        _validate_verifier(self.pipeline.verifier)
        _check_used(self.pipeline)


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
        at_least(f"pipeline.verifier.{name}", getattr(cfg, name), 1)
    if (problem := token_speed_target_problem(cfg.slo_tokens_per_s)) is not None:
        raise ConfigError("pipeline.verifier.slo_tokens_per_s", problem)


def _check_used(cfg: PipelineConfig) -> None:
    """Refuse the verifier's limits without a verifier policy (the plan's order); the
    planner's unread keys are :func:`~edgespec.hardware.drafting_plan.check_system`'s."""
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
    (:func:`edgespec.config.default_policy_names`: none of its policies has a default); a
    fleet scenario's field (``duration_s``) said to be one
    (:func:`~edgespec.sim.setup.system.refuse_fleet_fields`)."""
    given = default_policy_names(PipelineScenario, apply_overrides(data, overrides), KINDS)
    refuse_fleet_fields(given, [f.name for f in fields(PipelineScenario)])  # duration_s
    return from_dict(PipelineScenario, given)
