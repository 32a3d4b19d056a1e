"""A ``pipeline:`` scenario assembled and run: costs from the zhu profiles, the users'
tasks and channels drawn under the seed, the planner's plan (the costs, planner and plan
by :mod:`edgespec.hardware.drafting_plan`, as ``edgespec drafting-server --plan`` builds
them), the analytic latency and the event simulation (:func:`run_pipeline`).

Draws (each from its own stream under the scenario seed, so changing one part of the
scenario leaves the others' draws alone): ``pipeline-lengths`` — I_k ~ U[1, I_max], then
O_k ~ U[1, O_max]; ``pipeline-channels`` — :func:`edgespec.core.wireless.draw_channels`;
``pipeline-acceptance`` — one stream per task (:mod:`.outcomes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edgespec.config import ConfigError, PolicySpec, at_field
from edgespec.core.wireless import draw_channels, spectral_efficiency
from edgespec.hardware.drafting_plan import build_costs, build_plan, build_planner
from edgespec.hardware.wisp import COEFFICIENTS, wisp_batching_params
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import PipelineTask, inference_latency_s
from edgespec.policies.drafting_server.planner import (
    PipelineObservation,
    PipelinePlan,
    observe_tasks,
)
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.policies.registry import build_policy_at
from edgespec.sim.drafting_server.engine import SimOptions, simulate_pipeline
from edgespec.sim.drafting_server.outcomes import (
    OutcomeModel,
    TracePool,
    expected_outcomes,
    iid_outcomes,
    load_trace_pool,
    trace_outcomes,
)
from edgespec.sim.drafting_server.result import PipelineSimResult
from edgespec.sim.drafting_server.scenario import PipelineConfig, PipelineScenario, VerifierConfig
from edgespec.sim.drafting_server.stages import StageClock
from edgespec.sim.drafting_server.verifier import PolicyVerifier, Verifier
from edgespec.sim.model.rng import spawn_generator
from edgespec.sim.model.stop_model import ReplayFeatures, StopModel

Progress = Callable[[int, int], None]
"""``progress(done, total)``: how far a run is, for a bar."""


@dataclass(frozen=True, slots=True)
class PipelineRun:
    """A scenario's plan, its analytic T_inf (Eqs. 20–22 with the tasks' own O_k; without
    the pipeline when the planner's ``pipelined`` is false) and the simulation's result;
    with a verifier policy also ``plan_order``, the same run with the plan's batch-per-pass
    MBS order, for comparison."""

    scenario: PipelineScenario
    costs: PipelineCosts
    obs: PipelineObservation
    plan: PipelinePlan
    analytic_inference_s: float
    result: PipelineSimResult
    plan_order: PipelineSimResult | None = None

    @property
    def analytic_total_s(self) -> float:
        """Eq. 23: T_com + T_inf."""
        return self.plan.upload_s + self.analytic_inference_s


def draw_observation(cfg: PipelineConfig, seed: int) -> PipelineObservation:
    """K users' lengths and channels (module docstring), as the planner sees them."""
    lengths = spawn_generator(seed, "pipeline-lengths")
    inputs = lengths.integers(1, cfg.max_input_tokens + 1, cfg.num_users)
    outputs = lengths.integers(1, cfg.max_output_tokens + 1, cfg.num_users)
    channels = draw_channels(cfg.cell, cfg.num_users, spawn_generator(seed, "pipeline-channels"))
    efficiencies = [spectral_efficiency(cfg.cell, g) for g in channels.gains]
    if (user := next((k for k, e in enumerate(efficiencies) if not e > 0), None)) is not None:
        raise ConfigError("pipeline.cell", f"user {user}'s spectral efficiency log2(1 + p·g/σ²) "
                          "is 0 at this cell's tx_power_w, path_loss_db and noise_dbm: its "
                          "upload would never end")  # fmt: skip
    return observe_tasks(
        [int(i) for i in inputs], [int(o) for o in outputs], efficiencies, cfg.cell.bandwidth_hz
    )


def build_stop_model(
    scenario: PipelineScenario, features: tuple[ReplayFeatures, ...]
) -> StopModel | None:
    """The SBS's stop predictor (WISP Eq. 25) over the trace pool's features, if any."""
    config = scenario.pipeline.stop_predictor
    if config is None:
        return None
    policy = None
    if config.policy is not None:
        policy = build_policy_at("pipeline.stop_predictor.policy", "stop", config.policy)
    return StopModel(config, policy, features)


@dataclass(frozen=True, slots=True)
class AcceptanceSource:
    """What the acceptance mode needs, loaded once before planning: the trace pool
    (``trace``) and the stop predictor."""

    mode: str
    alpha: float
    seed: int
    pool: TracePool | None = None
    stop: StopModel | None = None

    def outcomes(
        self, costs: PipelineCosts, tasks: tuple[PipelineTask, ...], spec_len: int
    ) -> OutcomeModel:
        """A fresh outcome model (new streams under the seed) for one run."""
        if self.mode == "expected":
            return expected_outcomes(costs, tasks, spec_len)
        if self.pool is None:
            return iid_outcomes(tasks, spec_len, self.alpha, self.seed, self.stop)
        return trace_outcomes(tasks, spec_len, self.pool, self.seed, self.stop)


def build_acceptance(scenario: PipelineScenario) -> AcceptanceSource:
    """The scenario's acceptance mode with its trace set and stop predictor loaded."""
    cfg = scenario.pipeline
    mode = cfg.simulation.acceptance
    pool = None
    if mode == "trace":
        try:
            pool = load_trace_pool(cfg.simulation.traces)
        except ConfigError as exc:
            raise at_field(exc, "pipeline.simulation.traces") from exc
        except ValueError as exc:
            raise ConfigError("pipeline.simulation.traces", str(exc)) from exc
    stop = build_stop_model(scenario, () if pool is None else pool.features)
    return AcceptanceSource(mode, cfg.alpha, scenario.seed, pool, stop)


def wisp_params(costs: PipelineCosts) -> dict[str, float]:
    """WISP's Eq. 19 coefficients that equal the verify stage's Eq. 14/17 cost exactly:
    c^v_1·F over a batch is a·N_linear + b_c·N_interactions + c with
    a = c^v_1·J·(8·h1² + 4·h1·h2), b_c = c^v_1·4·J·h1, b_r = 0, c = c^v_2."""
    model, stage = costs.verify, costs.verify_stage
    c1 = stage.c1_s_per_flop
    per_token = 8 * model.hidden**2 + 4 * model.hidden * model.ffn
    return {
        "a_s": c1 * model.num_layers * per_token,
        "b_compute_s": c1 * 4 * model.num_layers * model.hidden,
        "b_read_s": 0.0,
        "c_s": stage.c2_s,
    }


def build_batching(cfg: VerifierConfig, costs: PipelineCosts) -> BatchingPolicy | None:
    """The MBS's batching policy (``None``: the plan's order)."""
    if cfg.policy is None:
        return None
    where, name = "pipeline.verifier.policy", cfg.policy.name
    params = dict(cfg.policy.params)
    if name == "wisp":
        if "profile" in params or any(k in params for k in COEFFICIENTS):
            params = wisp_batching_params(params, field=where)
        else:
            params = {**params, **wisp_params(costs)}
    policy: BatchingPolicy = build_policy_at(where, "batching", PolicySpec(name, params))
    return policy


def verifier_factory(
    cfg: VerifierConfig, costs: PipelineCosts
) -> Callable[[StageClock], Verifier] | None:
    """Builds the run's MBS schedule from its stage clock (``None``: the plan's order)."""
    policy = build_batching(cfg, costs)
    if policy is None:
        return None
    limits = BatchLimits(cfg.max_batch_size, cfg.max_batch_tokens, cfg.max_context_tokens)
    name = cfg.policy.name if cfg.policy is not None else "policy"
    return lambda clock: PolicyVerifier(clock, policy, limits, costs.acceptance, name)


def sim_options(scenario: PipelineScenario) -> SimOptions:
    cfg = scenario.pipeline
    return SimOptions(
        step_barrier=cfg.simulation.step_barrier,
        pipelined=cfg.planner.pipelined,
        slo_tokens_per_s=cfg.verifier.slo_tokens_per_s,
    )


def run_pipeline(scenario: PipelineScenario, progress: Progress | None = None) -> PipelineRun:
    """Plan, evaluate analytically and simulate one scenario (every file and policy the
    scenario names is loaded before the planner runs). ``progress(done, total)``: called
    as the run goes, a step per speculation length planned (the planner's) and one per
    simulation (two with a verifier policy: its run and the plan order's)."""
    cfg = scenario.pipeline
    costs = build_costs(cfg)
    verifier = verifier_factory(cfg.verifier, costs)
    acceptance = build_acceptance(scenario)
    obs = draw_observation(cfg, scenario.seed)
    steps = _Steps(progress, 1 if verifier is None else 2)
    plan = build_plan(build_planner(cfg, costs), obs, steps.planned)
    analytic = inference_latency_s(
        costs, obs.tasks, plan.batches, plan.spec_len, pipelined=cfg.planner.pipelined
    )
    options = sim_options(scenario)

    def simulate(schedule: Callable[[StageClock], Verifier] | None) -> PipelineSimResult:
        outcomes = acceptance.outcomes(costs, obs.tasks, plan.spec_len)
        result = simulate_pipeline(
            costs, obs, plan, options=options, outcomes=outcomes, verifier=schedule
        )
        steps.simulated()
        return result

    result = simulate(verifier)
    plan_order = None if verifier is None else simulate(None)
    return PipelineRun(scenario, costs, obs, plan, analytic, result, plan_order)


@dataclass(slots=True)
class _Steps:
    """:func:`run_pipeline`'s progress: the planner's steps, then ``num_simulations``."""

    progress: Progress | None
    num_simulations: int
    done: int = 0
    total: int = 0

    def planned(self, done: int, total: int) -> None:
        """The planner's ``progress``: ``done`` of its ``total`` steps."""
        self._show(done, total + self.num_simulations)

    def simulated(self) -> None:
        self._show(self.done + 1, self.total)

    def _show(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if self.progress is not None:
            self.progress(done, total)
