"""The plan as events: how far sampled and real acceptance move the makespan of the
paper's expected-value model. One draw of the default setting ((LLaMA-1.1B, LLaMA-7B),
K = 100, α = 0.8), its plan run by the simulator's edge drafting server
(:mod:`edgespec.sim.drafting_server`) with the step barrier, under ``expected`` acceptance
(equal to the analytic T_com + T_inf), ``iid`` at α and ``trace`` (the bundled GSM8K
traces of the Gemma 3 270M pair: the paper's LLaMA pairs have no traces here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from edgespec.policies.drafting_server.latency import inference_latency_s
from edgespec.policies.drafting_server.planner import PipelinePlanner
from edgespec.reproduce.zhu.runs import Users
from edgespec.reproduce.zhu.setup import SWEEP_PAIR, ZhuSetup
from edgespec.sim.drafting_server.engine import simulate_pipeline
from edgespec.sim.drafting_server.outcomes import iid_outcomes, load_trace_pool, trace_outcomes

TRACES = ("gsm8k",)


@dataclass(frozen=True, slots=True)
class AcceptanceJob:
    """One draw's makespans (seconds) by acceptance mode, and the analytic one."""

    setup: ZhuSetup
    draw: int

    def __call__(self) -> dict[str, float]:
        s = self.setup
        costs = s.costs(SWEEP_PAIR)
        obs = Users.draw(s, self.draw).observe(
            s, s.num_users, s.max_input_len, s.max_output_len, s.bandwidth_mhz
        )
        plan = PipelinePlanner(costs, max_spec_len=s.max_spec_len).plan(obs)
        spec_len, seed = plan.spec_len, s.seed + self.draw
        pool = load_trace_pool(TRACES)
        return {
            "analytic": plan.upload_s
            + inference_latency_s(costs, obs.tasks, plan.batches, spec_len),
            "expected": simulate_pipeline(costs, obs, plan).makespan_s,
            "iid": simulate_pipeline(
                costs, obs, plan, outcomes=iid_outcomes(obs.tasks, spec_len, s.acceptance, seed)
            ).makespan_s,
            "trace": simulate_pipeline(
                costs, obs, plan, outcomes=trace_outcomes(obs.tasks, spec_len, pool, seed)
            ).makespan_s,
            "trace_acceptance": trace_acceptance_rate(),
        }


def trace_acceptance_rate() -> float:
    """The share of accepted positions in the trace pool's sequences."""
    seqs = load_trace_pool(TRACES).acceptance.pool
    return float(np.mean([x for seq in seqs for x in seq]))


def events_summary(runs: Sequence[Mapping[str, float]]) -> list[str]:
    """REPORT.md lines: the makespan by acceptance mode against the analytic one."""
    analytic = np.array([r["analytic"] for r in runs])
    lines = [
        "## The plan as events: sampled and real acceptance",
        "",
        f"{len(runs)} draw(s) of the default setting ((LLaMA-1.1B, LLaMA-7B), K = 100, "
        "α = 0.8): the plan run by the simulator's edge drafting server with the step barrier "
        "(`edgespec sim zhu-pipeline`); makespan T against the analytic T_com + T_inf "
        "(median over draws):",
        "",
        "| acceptance | T (s) | against analytic |",
        "|---|---|---|",
        f"| analytic (Eqs. 20–23) | {np.median(analytic):.1f} | – |",
    ]
    names = {
        "expected": "expected, Eq. 7 (the paper)",
        "iid": "iid at α = 0.8",
        "trace": f"trace: GSM8K, Gemma 3 270M pair (acceptance {runs[0]['trace_acceptance']:.0%})",
    }
    for key, name in names.items():
        got = np.array([r[key] for r in runs])
        change = float(np.median(got / analytic - 1))
        change = 0.0 if abs(change) < 1e-9 else change  # the analytic value, to rounding
        lines.append(f"| {name} | {np.median(got):.1f} | {change:+.2%} |")
    return [*lines, ""]
