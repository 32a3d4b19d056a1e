"""The part of a ``pipeline:`` scenario (Zhu et al.'s edge drafting server) that plans, and
the costs, planner and plan it builds: shared by both hosts, ``edgespec sim`` on the
scenario (:mod:`edgespec.sim.drafting_server.scenario` extends :class:`PipelineSystem`
with the simulator's sections) and ``edgespec drafting-server --plan`` (the runtime, which
imports nothing from the simulator, reads a scenario file with :func:`load_planning`).

Every error names its field (``config field 'pipeline.planner.spec_len': must be >= 1,
got 0``), from a file also its ``file:line``. A profile the plan uses beyond what it
measured is one warning line (:func:`plan_range_warnings`), alike from both hosts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from edgespec.config import (
    ConfigError,
    ConfigFileError,
    PolicySpec,
    applies_only,
    at_field,
    from_dict,
    located_in,
    read_yaml_file,
)
from edgespec.config.file_paths import anchored
from edgespec.core.wireless import WirelessCell
from edgespec.hardware.drafting_server import GB, StageRole, zhu_stage
from edgespec.hardware.profile_info import profile_info, range_warning
from edgespec.hardware.scenario_system import system_of
from edgespec.policies.contracts import policy_name
from edgespec.policies.drafting_contract import check_plan
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.planner import (
    MAX_OUTPUT_LEN,
    PipelineObservation,
    PipelinePlan,
)
from edgespec.policies.interfaces import DraftingPlanner
from edgespec.policies.params import MAX_GAMMA
from edgespec.policies.registry import build_policy_at

BatchingName = Literal["dp", "max", "static", "heuristic", "none"]

SIMULATOR_SECTIONS = ("simulation", "verifier", "stop_predictor")
"""The ``pipeline:`` sections only the simulator reads (its
:class:`~edgespec.sim.drafting_server.scenario.PipelineConfig` adds them to
:class:`PipelineSystem`); :func:`load_planning` leaves them to it, and names them among
the known keys when one is unknown."""

MAX_USERS = 10_000
"""Users a drafting-server scenario may have: its planning time grows with their square
(``time edgespec sim zhu-pipeline pipeline.num_users=4000``: 20 s on a 2-core machine)."""


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
class PipelineSystem:
    """The system: zhu profiles of the draft (SBS) and verify (MBS) stages, Γ_s in GB, α,
    K users with I_k ~ U[1, I_max] and O_k ~ U[1, O_max], the cell (uplink) and the
    planner. Checked by :func:`check_system` (its host's ``validate`` calls it)."""

    draft_profile: str = "rtx3080-tinyllama-1.1b-zhu"
    verify_profile: str = "rtx4500-llama2-7b-zhu"
    sbs_memory_gb: float = 16.0
    alpha: float = 0.8
    num_users: int = 100
    max_input_tokens: int = 512
    max_output_tokens: int = 2048
    cell: WirelessCell = field(default_factory=WirelessCell)
    planner: PlannerConfig = field(default_factory=PlannerConfig)


def at_least(where: str, value: float | None, minimum: float) -> None:
    """``value`` (when given) must be ``>= minimum``: a ``ConfigError`` at ``where``."""
    if value is not None and not value >= minimum:
        raise ConfigError(where, f"must be >= {minimum}, got {value}")


MAX_SBS_MEMORY_GB = 1e6
"""The largest SBS memory Γ_s, GB (a petabyte)."""


def check_system(cfg: PipelineSystem) -> None:
    """:class:`ConfigError` at the first bad field of the system or its planner."""
    if not 0 < cfg.sbs_memory_gb <= MAX_SBS_MEMORY_GB:  # a huge one divided into NaN
        got = cfg.sbs_memory_gb
        raise ConfigError(
            "pipeline.sbs_memory_gb", f"must be in (0, {MAX_SBS_MEMORY_GB:g}], got {got}"
        )
    if not 0.0 <= cfg.alpha <= 1.0:
        raise ConfigError("pipeline.alpha", f"must be in [0, 1], got {cfg.alpha}")
    for name in ("num_users", "max_input_tokens", "max_output_tokens"):
        at_least(f"pipeline.{name}", getattr(cfg, name), 1)
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
    _check_planner(cfg.planner)
    _check_planner_used(cfg.planner)


def _check_planner(cfg: PlannerConfig) -> None:
    for name in ("spec_len", "max_spec_len", "static_batch_size", "output_len"):
        at_least(f"pipeline.planner.{name}", getattr(cfg, name), 1)
    bounds = {"spec_len": MAX_GAMMA, "max_spec_len": MAX_GAMMA, "output_len": MAX_OUTPUT_LEN}
    for name, bound in bounds.items():  # the planner's bounds (PipelinePlanner)
        length = getattr(cfg, name)
        if length is not None and length > bound:
            raise ConfigError(f"pipeline.planner.{name}", f"must be <= {bound:,}, got {length}")


def _check_planner_used(planner: PlannerConfig) -> None:
    """Refuse a planner key the chosen setting does not read: the static rule's batch size
    under another batching rule, ``max_spec_len`` beside a fixed ``spec_len``."""
    was = PlannerConfig()
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


def load_planning(path: str | Path) -> PipelineSystem:
    """The system and planner of the ``pipeline:`` scenario file ``path`` (the simulator's
    form, ``system: drafting_server`` as ``edgespec sim`` asks; its
    :data:`SIMULATOR_SECTIONS` are the simulator's and not read here), checked, its
    relative profile paths read against its folder as ``edgespec sim`` reads them
    (:mod:`edgespec.config.file_paths`); an error at a field the file gives starts with
    ``file:line``."""
    read = read_yaml_file(path)
    file = replace(read, data=dict(anchored(read.data, read.path.parent)))  # as sim reads it
    with located_in(file):
        _check_system(file.path, file.data)
        section = file.data.get("pipeline")
        if section is None:
            raise ConfigFileError(
                str(file.path), "no pipeline: section (a drafting-server scenario, system: "
                "drafting_server, plans from it)"
            )  # fmt: skip
        cfg = from_dict(PipelineSystem, section, "pipeline", others=SIMULATOR_SECTIONS)
        check_system(cfg)
    return cfg


def _check_system(path: Path, data: Mapping[str, Any]) -> None:
    """``edgespec sim``'s rule (:func:`~edgespec.hardware.scenario_system.system_of`): a
    ``pipeline:`` section needs ``system: drafting_server``; without a ``system:`` line to
    point at, the error names the file."""
    try:
        system_of(data)
    except ConfigError as exc:
        if "system" in data:
            raise
        raise ConfigFileError(str(path), str(exc)) from None


def build_costs(cfg: PipelineSystem) -> PipelineCosts:
    """:class:`PipelineCosts` from the scenario's zhu profiles (each over Zhu's printed
    FLOPs, of its stage's role: :func:`zhu_stage`), Γ_s (GB) and α."""
    stages = []
    roles: tuple[tuple[str, str, StageRole], ...] = (
        ("pipeline.draft_profile", cfg.draft_profile, "draft"),
        ("pipeline.verify_profile", cfg.verify_profile, "target"),
    )
    for where, profile, role in roles:
        try:
            stages.append(zhu_stage(profile, role))
        except ConfigError as exc:
            raise at_field(exc, where, profile) from exc
    (draft, draft_stage), (verify, verify_stage) = stages
    try:
        return PipelineCosts(
            draft, verify, draft_stage, verify_stage, cfg.sbs_memory_gb * GB, cfg.alpha
        )
    except ValueError as exc:
        raise ConfigError("pipeline.sbs_memory_gb", str(exc)) from exc


def build_planner(cfg: PipelineSystem, costs: PipelineCosts) -> DraftingPlanner:
    """The planner ``pipeline.planner.name`` names (:data:`edgespec.policies.registry.PLANNER`)
    with the section's options and the run's costs."""
    p = cfg.planner
    options = {
        "costs": costs,
        "batching": p.batching,
        "pipelined": p.pipelined,
        "bandwidth": p.bandwidth,
        "max_spec_len": p.max_spec_len,
        "spec_len": p.spec_len,
        "static_batch_size": p.static_batch_size,
        "output_len": p.output_len or cfg.max_output_tokens,
    }
    planner: DraftingPlanner = build_policy_at(
        "pipeline.planner", "planner", PolicySpec(p.name, options)
    )
    return planner


def build_plan(
    planner: DraftingPlanner,
    obs: PipelineObservation,
    progress: Callable[[int, int], None] | None = None,
) -> PipelinePlan:
    """``planner``'s plan of ``obs``'s tasks (the planner :func:`build_planner` built),
    checked (:func:`~edgespec.policies.drafting_contract.check_plan`: a
    :class:`~edgespec.policies.contracts.PolicyContractError` naming the planner)."""
    try:
        plan = planner.plan(obs, progress)
    except ValueError as exc:  # a task that does not fit the SBS memory on its own
        raise ConfigError("pipeline.sbs_memory_gb", str(exc)) from exc
    return check_plan(plan, len(obs.tasks), policy_name(planner))


def plan_range_warnings(
    system: PipelineSystem, plan: PipelinePlan, lengths: Sequence[tuple[int, int]]
) -> list[str]:
    """A line for each profile of ``system`` that ``plan`` uses beyond what it measured
    (:func:`~edgespec.hardware.profile_info.range_warning`; once each, draft's first):
    batches up to the plan's largest, tasks of up to the longest I + O of ``lengths`` (each
    task's ``(I, O)``: its prompt and the output it runs or is planned for). Both hosts say
    them: ``edgespec sim`` and ``edgespec drafting-server --plan``."""
    largest_batch = max(len(batch) for batch in plan.batches)
    longest_tokens = max(input_len + output_len for input_len, output_len in lengths)
    lines: list[str] = []
    for profile in (system.draft_profile, system.verify_profile):
        line = range_warning(profile_info(profile), largest_batch, longest_tokens)
        if line is not None and line not in lines:
            lines.append(line)
    return lines
