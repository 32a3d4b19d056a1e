"""Scenario: the frozen, validated description of one simulation run (YAML → dataclasses).

Loaded once through :mod:`edgespec.config` (``key.path=value`` overrides apply before
validation); every error names the offending field, e.g.
``config field 'auto_topology.devices[0].link': unknown link 'wan'; known: ['default']``.
``auto_topology`` lists pools; :func:`edgespec.sim.setup.topology.expand_topology` turns them into
explicit entities. A scenario is a YAML file or a bundled one's name
(:func:`edgespec.config.scenario_files.scenario_path`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from edgespec.config import (
    ConfigError,
    ConfigFileError,
    PolicySpec,
    YamlFile,
    apply_overrides,
    default_policy_names,
    from_dict,
    located_in,
    read_yaml_file,
)
from edgespec.config.file_paths import anchored
from edgespec.config.scenario_files import default_scenario_path, scenario_path
from edgespec.core.link_delay import DraftProbsWire
from edgespec.core.sampling_cuts import (
    SamplingCuts,
    min_p_problem,
    top_k_problem,
    top_p_problem,
)
from edgespec.core.wireless import WirelessCell
from edgespec.policies.registry import KINDS
from edgespec.policies.slo import DeadlineRule, token_speed_target_problem
from edgespec.sim.model.network import loss_rate_problem
from edgespec.sim.model.semantic import VerificationConfig
from edgespec.sim.model.stop_model import StopPredictorConfig
from edgespec.sim.run_folder import check_run_name
from edgespec.sim.setup.cells import plan_cells, replicate_cells
from edgespec.sim.setup.centralized_fields import check_centralized_fields
from edgespec.sim.setup.pools import CostModelConfig as CostModelConfig
from edgespec.sim.setup.pools import DevicePool as DevicePool
from edgespec.sim.setup.pools import ServerPool as ServerPool
from edgespec.sim.setup.pools import TopologyConfig as TopologyConfig
from edgespec.sim.setup.pools import frozen_mapping
from edgespec.sim.setup.scenario_checks import validate_topology
from edgespec.sim.setup.workload_config import MAX_DURATION_S, check_kind_fields, validate_workload
from edgespec.sim.setup.workload_config import DsdSimCompat as DsdSimCompat
from edgespec.sim.setup.workload_config import WorkloadConfig as WorkloadConfig
from edgespec.sim.setup.workload_config import non_negative as _non_negative
from edgespec.sim.setup.workload_config import positive as _positive

Mode = Literal["distributed", "fused", "centralized"]
FusedRounds = Literal["colocated", "cloud_only"]
"""How the server runs a fused round (docs/SIMULATOR.md "Execution modes"): ``colocated``
(DSD §3: a speculative round drafted by the server's co-located draft) or ``cloud_only``
(DSD §4.4 and DSD-Sim: the target decodes one token per pass, nothing drafted)."""


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """Edge↔server network path (both directions).

    ``wireless``: the uplink is a shared OFDMA cell instead (Zhu et al., seed 001, §II-B;
    :mod:`edgespec.core.wireless`): each device on this link gets an equal share of the
    cell's band, w = 1/n for the n devices on the link in the whole scenario, and a channel
    drawn once per device (position uniform in the cell, Rayleigh fade), so its uplink
    rate is w·B·log2(1 + p·g/σ²); ``bandwidth_mbps`` is then the downlink's.
    """

    rtt_ms: float = 10.0
    jitter_ms: float = 0.0
    bandwidth_mbps: float = 100.0
    loss_rate: float = 0.0
    retransmit_timeout_ms: float = 200.0
    wireless: WirelessCell | None = None


@dataclass(frozen=True, slots=True)
class PoliciesConfig:
    """Policies by registry name (``edgespec.policies.registry``) with parameters."""

    routing: PolicySpec = field(default_factory=lambda: PolicySpec("round_robin"))
    batching: PolicySpec = field(default_factory=lambda: PolicySpec("fcfs"))
    window: PolicySpec = field(default_factory=lambda: PolicySpec("static"))


@dataclass(frozen=True, slots=True)
class AcceptanceConfig:
    """``trace`` (replay ``acceptance_seq``; ``traces`` = bundled names or JSONL paths,
    used for requests whose workload carries none), ``iid`` (``alpha``) or ``decay``
    (conditional ``rates`` by position in the window)."""

    kind: Literal["trace", "iid", "decay"] = "decay"
    alpha: float = 0.7
    rates: tuple[float, ...] = (0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45)
    traces: tuple[str, ...] | None = None
    """``None``: the bundled traces (``edgespec/data/traces/``)."""
    sampled_draws: Literal["captured", "redrawn"] = "captured"
    """A sampled trace's outcomes (one with ``acceptance_prob``): ``captured``, what its
    rounds drew, the same at every seed; ``redrawn``, each request's own draw, position i
    accepted with its α, from the run's seed
    (:func:`edgespec.sim.model.acceptance.redrawn_sequence`)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """One simulation run. ``duration_s`` of simulated time; requests unfinished then are
    not reported. ``slo_classes`` maps a class to its token-speed target (tok/s) or null;
    ``deadline_rule`` says how a queued verification's deadline follows from it
    (:mod:`edgespec.policies.slo`: ``pace`` or WISP's per-round ``token_speed``)."""

    name: str = "scenario"
    seed: int = 0
    system: Literal["fleet"] = "fleet"
    """The simulator (:mod:`edgespec.sim.setup.system`): this form is the fleet's."""
    duration_s: float = 60.0
    mode: Mode = "distributed"
    temperature: float = 0.0
    draft_probs: DraftProbsWire = "dense"
    """How a sampled round's draft distributions travel (``temperature`` > 0):
    :data:`~edgespec.core.link_delay.DraftProbsWire`."""
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    """The cuts the fleet samples with (``edgespec draft``'s ``--top-k``, ``--top-p``,
    ``--min-p``; each off by default), read when ``temperature`` > 0: ``top_k`` bounds a
    compact row's entries (:class:`~edgespec.core.link_delay.DraftRows`), and a replayed
    trace captured with other cuts is warned of (``edgespec sim``)."""
    slo_classes: Mapping[str, float | None] = field(
        default_factory=lambda: frozen_mapping({"default": None})
    )
    deadline_rule: DeadlineRule = "pace"
    links: Mapping[str, LinkConfig] = field(
        default_factory=lambda: frozen_mapping({"default": LinkConfig()})
    )
    auto_topology: TopologyConfig = field(default_factory=TopologyConfig)
    policies: PoliciesConfig = field(default_factory=PoliciesConfig)
    acceptance: AcceptanceConfig = field(default_factory=AcceptanceConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    stop_predictor: StopPredictorConfig | None = None
    verification: VerificationConfig = field(default_factory=VerificationConfig)
    dsdsim_compat: DsdSimCompat | None = None
    fused_rounds: FusedRounds = "colocated"
    cloud_only_draft_pass: bool = False
    """DSD-Sim's wasted pass: a ``cloud_only`` round also runs one co-located draft pass
    whose token is thrown away (DSD-Sim sets γ = 1 for a fused conversation)."""
    record_rounds: bool = False
    fast_path: bool = True

    @property
    def cuts(self) -> SamplingCuts:
        """``top_k``, ``top_p`` and ``min_p``."""
        return SamplingCuts(self.top_k, self.top_p, self.min_p)

    def validate(self) -> None:
        check_run_name(self.name)
        _positive("duration_s", self.duration_s)
        if self.duration_s > MAX_DURATION_S:
            raise ConfigError(
                "duration_s", f"must be at most {MAX_DURATION_S:g} s, got {self.duration_s!r}"
            )
        if self.seed < 0:
            raise ConfigError("seed", f"must be >= 0, got {self.seed}")
        if self.cloud_only_draft_pass and self.fused_rounds != "cloud_only":
            raise ConfigError(
                "cloud_only_draft_pass",
                f"needs fused_rounds: cloud_only, got fused_rounds: {self.fused_rounds}",
            )
        _non_negative("temperature", self.temperature)
        _validate_cuts(self)
        for cls, target in self.slo_classes.items():
            if (problem := token_speed_target_problem(target)) is not None:
                raise ConfigError(f"slo_classes.{cls}", problem)
        for name, link in self.links.items():
            _validate_link(f"links.{name}", link)
        validate_topology(self.auto_topology, self.links, self.slo_classes)
        _validate_acceptance(self.acceptance)
        if self.acceptance.sampled_draws == "redrawn" and self.stop_predictor is not None:
            raise ConfigError(
                "acceptance.sampled_draws",
                "redrawn outcomes leave the draft_features a stop predictor replays, which "
                "follow the captured ones; keep captured (the default) with stop_predictor",
            )
        validate_workload(self.workload, self.duration_s)
        _validate_verification(self)
        if self.mode == "centralized":  # what it leaves unused
            check_centralized_fields(self.fused_rounds, self.dsdsim_compat)
        plan_cells(self)  # the cell rules (pinned device pools)


def _validate_cuts(scenario: Scenario) -> None:
    problems = (("top_k", top_k_problem(scenario.top_k)),
                ("top_p", top_p_problem(scenario.top_p)),
                ("min_p", min_p_problem(scenario.min_p)))  # fmt: skip
    for name, problem in problems:
        if problem is not None:
            raise ConfigError(name, problem)


def _validate_link(where: str, link: LinkConfig) -> None:
    for name in ("rtt_ms", "jitter_ms", "retransmit_timeout_ms"):
        _non_negative(f"{where}.{name}", getattr(link, name))
    _positive(f"{where}.bandwidth_mbps", link.bandwidth_mbps)
    if (problem := loss_rate_problem(link.loss_rate)) is not None:
        raise ConfigError(f"{where}.loss_rate", problem)


ACCEPTANCE_FIELD_KINDS = {
    "alpha": ("iid",),
    "rates": ("decay",),
    "traces": ("trace",),
    "sampled_draws": ("trace",),
}
"""The acceptance kind that uses each field; under another it must keep its default."""


def _validate_acceptance(acc: AcceptanceConfig) -> None:
    if not 0.0 <= acc.alpha <= 1.0:
        raise ConfigError("acceptance.alpha", f"must be in [0, 1], got {acc.alpha}")
    if acc.kind == "decay" and not acc.rates:
        raise ConfigError("acceptance.rates", "needs at least one rate")
    if acc.traces is not None and not acc.traces:
        raise ConfigError("acceptance.traces", "is empty: name at least one trace (bundled "
                          "name or JSONL path), or leave it out for the bundled ones")  # fmt: skip
    for k, rate in enumerate(acc.rates):
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"acceptance.rates[{k}]", f"must be in [0, 1], got {rate}")
    check_kind_fields("acceptance", acc.kind, acc, AcceptanceConfig(), ACCEPTANCE_FIELD_KINDS)


def _validate_verification(scenario: Scenario) -> None:
    """Semantic verification works on greedy chains drafted for verification
    (:mod:`edgespec.sim.model.semantic`)."""
    if not scenario.verification.semantic:
        return
    if scenario.temperature > 0:
        raise ConfigError(
            "verification.rule",
            f"semantic verification judges greedy mismatches; needs temperature 0, got "
            f"{scenario.temperature}",
        )
    if scenario.mode == "centralized":
        raise ConfigError(
            "verification.rule", "semantic verification needs drafts; mode is centralized"
        )
    if scenario.stop_predictor is not None:
        raise ConfigError(
            "verification.rule",
            "semantic verification does not combine with a stop predictor (which draws "
            "the round's acceptance itself)",
        )


def scenario_from_dict(data: Mapping[str, Any], overrides: Sequence[str] = ()) -> Scenario:
    """Build a validated Scenario from a plain mapping (sweeps) plus overrides, with
    ``auto_topology.cells`` written out as pinned pools (:func:`.cells.replicate_cells`);
    a policy given its params alone (``policies.window.params.gamma=2``, the file naming
    no window policy) is the default policy, as :func:`edgespec.config.load_config` has it
    (:func:`edgespec.config.default_policy_names`); one without a default
    (``stop_predictor.policy``) is refused naming the policies of its kind."""
    given = default_policy_names(Scenario, apply_overrides(data, overrides), KINDS)
    return from_dict(Scenario, replicate_cells(given))


def read_scenario_file(file: Path) -> YamlFile:
    """A scenario file as read once: its mapping, its relative file paths read against its
    folder (:mod:`edgespec.config.file_paths`), and the line of each key, which the
    errors at its fields name (:func:`edgespec.config.located_in`); an empty one (or
    comments only) is refused: it ran the built-in defaults, one device for 60 s, without
    a word."""
    read = read_yaml_file(file)
    if not read.data:
        raise ConfigFileError(str(file), "holds no scenario (empty, or comments only)")
    return replace(read, data=dict(anchored(read.data, file.parent)))


def load_scenario(path: str | Path | None, overrides: Sequence[str] = ()) -> Scenario:
    """Load a scenario YAML (a file or a bundled scenario's name,
    :func:`~edgespec.config.scenario_files.scenario_path`;
    ``None``: the bundled default) with ``key.path=value`` overrides."""
    read = read_scenario_file(scenario_path(path) if path else default_scenario_path())
    with located_in(read, overrides):
        return scenario_from_dict(read.data, overrides)
