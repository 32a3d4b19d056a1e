"""``edgespec reproduce zhu``: the Monte-Carlo runs behind Figs. 6–9 (SEED-NOTES §2.3).

One job per draw (:class:`DrawJob`): it draws K users' lengths and channels once and
evaluates every scheme of every figure on them, so configurations share their random
numbers. A scheme's latency is its plan's upload time plus the recursion's T_inf with the
tasks' own output lengths. Results are latencies in seconds keyed
``figure/pair/parameter=value/scheme``; Fig. 7's schemes and Heuristic batching also with
O_max as every task's output length (``sweep/point/scheme@o_max``, the other reading of the
lengths a latency is taken over, SEED-NOTES §2.5, 3). ADS's latencies also at its fastest
and slowest batch size (``…/ads@fastest``, ``…/ads@slowest``), Static batching's at its
fastest and slowest size at the largest K (``sweep/K=…/static_batching@fastest``, …), and
each sweep point's ``one_batch_tie`` flag (:mod:`~edgespec.reproduce.zhu.latencies`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from edgespec.core.wireless import draw_channels, spectral_efficiency
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.planner import (
    BandwidthRule,
    PipelineObservation,
    PipelinePlanner,
    bandwidth_split,
    observe_tasks,
)
from edgespec.reproduce.zhu.latencies import (
    ads_latency_s,
    ads_over_sizes_s,
    latency_s,
    one_batch_tie,
    static_over_sizes_s,
)
from edgespec.reproduce.zhu.setup import (
    FIG9_BAND_MHZ,
    G0_READINGS_DB,
    PAIRS,
    SWEEP_PAIR,
    ZhuSetup,
)

SD_SCHEMES: dict[str, dict[str, object]] = {
    "proposed": {},
    "no_pipeline": {"pipelined": False},
    "fsl": {"spec_len": 7},
    "no_batching": {"batching": "none"},
    "max_batching": {"batching": "max"},
    "heuristic_batching": {"batching": "heuristic"},
    "static_batching": {"batching": "static"},
}
"""Figs. 7–8's SD schemes as planner configurations."""
FIG7_SCHEMES = ("proposed", "no_pipeline", "fsl", "no_batching")
"""Fig. 7's schemes, whose latencies are also taken with O_max as every task's output (as is
Heuristic batching's, which beats the DP at small K: :func:`~.causes.heuristic_wins`)."""
AT_O_MAX = "@o_max"
"""The suffix of a scheme's latency with O_max as every task's output length."""
ONE_BATCH_TIE = "one_batch_tie"
"""A sweep point's flag (``sweep/point/one_batch_tie``, 1.0 or 0.0): the proposed plan and
SD w/o pipeline's are the same plan of one batch, so their latencies are equal by the
formula (Eq. 21 with one batch active in every step is the sequential sum)."""
FASTEST, SLOWEST = "@fastest", "@slowest"
"""Suffixes of a baseline's latency at the fastest and the slowest value of its chosen
input over that input's whole range: ADS over every batch size from 1 task to K (Fig. 6),
Static batching over every batch size from 1 task to the SBS memory's cap (Fig. 8a, at the
largest K)."""


@dataclass(frozen=True, slots=True)
class ZhuPlan:
    """How much to run: the full reproduction or ``--quick`` (CI)."""

    draws: int
    alphas: tuple[float, ...]
    num_users: tuple[int, ...]
    max_inputs: tuple[int, ...]
    max_outputs: tuple[int, ...]
    bandwidths_mhz: tuple[float, ...]
    exhaustive_draws: int
    exhaustive_users: int
    event_draws: int = 1

    @staticmethod
    def full() -> ZhuPlan:
        return ZhuPlan(
            20,
            (0.5, 0.6, 0.7, 0.8, 0.9),
            (10, 20, 30, 40, 50, 60, 70, 80, 90, 100),
            (128, 256, 512, 768, 1024, 1280, 1536, 1792),
            (256, 512, 768, 1024, 1280, 1536, 1792, 2048),
            (15.0, 20.0, 25.0, 30.0, 35.0, 40.0),
            20,
            6,
            5,
        )

    @staticmethod
    def quick() -> ZhuPlan:
        return ZhuPlan(
            1, (0.5, 0.9), (10, 50, 90, 100), (512, 1792), (1024, 1792), (15.0, 25.0, 40.0), 2, 5
        )


@dataclass(frozen=True, slots=True)
class Users:
    """One draw's users: uniforms for the lengths (common across I_max / O_max sweeps) and
    channel gains."""

    input_u: tuple[float, ...]
    output_u: tuple[float, ...]
    gains: tuple[float, ...]

    @staticmethod
    def draw(setup: ZhuSetup, seed: int) -> Users:
        rng = np.random.default_rng([setup.seed, seed])
        k = setup.num_users
        input_u = tuple(1.0 - rng.random(k))
        output_u = tuple(1.0 - rng.random(k))
        return Users(input_u, output_u, draw_channels(setup.cell(), k, rng).gains)

    def read_g0(self, setup: ZhuSetup, path_loss_db: float) -> Users:
        """The same users with g0 read as ``path_loss_db`` instead of the setup's (a gain is
        g0·ϱ_k·d_k⁻², so every gain scales by the ratio of the readings)."""
        scale = 10.0 ** ((path_loss_db - setup.path_loss_db) / 10.0)
        return replace(self, gains=tuple(g * scale for g in self.gains))

    def observe(
        self, setup: ZhuSetup, num_users: int, max_input: int, max_output: int, band_mhz: float
    ) -> PipelineObservation:
        cell = setup.cell(band_mhz)
        return observe_tasks(
            [max(1, int(np.ceil(u * max_input))) for u in self.input_u[:num_users]],
            [max(1, int(np.ceil(u * max_output))) for u in self.output_u[:num_users]],
            [spectral_efficiency(cell, g) for g in self.gains[:num_users]],
            cell.bandwidth_hz,
        )


def upload_s(costs: PipelineCosts, obs: PipelineObservation, rule: BandwidthRule) -> float:
    """T_com of the optimal (Eq. 27) or uniform split."""
    return bandwidth_split(costs, obs, rule)[1]


@dataclass(frozen=True, slots=True)
class DrawJob:
    """Every figure's schemes on one Monte-Carlo draw."""

    setup: ZhuSetup
    plan: ZhuPlan
    draw: int

    def __call__(self) -> dict[str, float]:
        users = Users.draw(self.setup, self.draw)
        results: dict[str, float] = {}
        results.update(self._fig6_and_9(users))
        results.update(self._fig7_and_8(users))
        return results

    def _planner(self, costs: PipelineCosts, **kwargs: object) -> PipelinePlanner:
        options: dict[str, object] = {
            "max_spec_len": self.setup.max_spec_len,
            "static_batch_size": self.setup.static_batch_size,
            **kwargs,
        }
        return PipelinePlanner(costs, **options)  # type: ignore[arg-type]

    def _fig6_and_9(self, users: Users) -> dict[str, float]:
        s, out = self.setup, {}
        for pair in PAIRS:
            for alpha in sorted({*self.plan.alphas, s.acceptance}):
                costs = s.costs(pair, alpha)
                obs = users.observe(
                    s, s.num_users, s.max_input_len, s.max_output_len, s.bandwidth_mhz
                )
                plan = self._planner(costs).plan(obs)
                out[f"fig6/{pair}/alpha={alpha}/proposed"] = latency_s(costs, obs, plan, True)
                key = f"fig6/{pair}/alpha={alpha}/ads"
                out[key] = ads_latency_s(s, costs, obs, s.max_output_len)
                fastest, slowest = ads_over_sizes_s(costs, obs)
                out[key + FASTEST], out[key + SLOWEST] = fastest, slowest
                if alpha != s.acceptance:
                    continue
                inference = out[f"fig6/{pair}/alpha={alpha}/proposed"] - plan.upload_s
                for band in self.plan.bandwidths_mhz:
                    band_obs = users.observe(
                        s, s.num_users, s.max_input_len, s.max_output_len, band
                    )
                    for rule in ("optimal", "uniform"):
                        upload = upload_s(costs, band_obs, rule)
                        out[f"fig9/{pair}/band={band}/{rule}"] = inference + upload
                out.update(self._g0_readings(users, pair, costs, inference))
        return out

    def _g0_readings(
        self, users: Users, pair: str, costs: PipelineCosts, inference_s: float
    ) -> dict[str, float]:
        """Fig. 9's point (B_w = 25 MHz) with g0 read each way of :data:`G0_READINGS_DB`;
        the plan's inference is the chosen reading's (the bandwidth split moves T_com only)."""
        s, out = self.setup, {}
        for reading in G0_READINGS_DB:
            obs = users.read_g0(s, reading).observe(
                s, s.num_users, s.max_input_len, s.max_output_len, FIG9_BAND_MHZ
            )
            for rule in ("optimal", "uniform"):
                out[f"g0/{pair}/db={reading:g}/{rule}"] = inference_s + upload_s(costs, obs, rule)
        return out

    def _fig7_and_8(self, users: Users) -> dict[str, float]:
        s, out = self.setup, {}
        costs = s.costs(SWEEP_PAIR)
        for name, (k, i_max, o_max) in sweep_points(s, self.plan):
            obs = users.observe(s, k, i_max, o_max, s.bandwidth_mhz)
            longest = replace(obs, tasks=tuple(replace(t, output_len=o_max) for t in obs.tasks))
            plans = {}
            for scheme, kwargs in SD_SCHEMES.items():
                planner = self._planner(costs, output_len=o_max, **kwargs)
                plan = plans[scheme] = planner.plan(obs)
                out[f"sweep/{name}/{scheme}"] = latency_s(costs, obs, plan, planner.pipelined)
                if scheme in (*FIG7_SCHEMES, "heuristic_batching"):
                    at_o_max = latency_s(costs, longest, plan, planner.pipelined)
                    out[f"sweep/{name}/{scheme}{AT_O_MAX}"] = at_o_max
                if scheme == "static_batching" and name == f"K={max(self.plan.num_users)}":
                    fastest, slowest = static_over_sizes_s(costs, obs, o_max, planner)
                    out[f"sweep/{name}/{scheme}{FASTEST}"] = fastest
                    out[f"sweep/{name}/{scheme}{SLOWEST}"] = slowest
            out[f"sweep/{name}/{ONE_BATCH_TIE}"] = float(one_batch_tie(plans))
            out[f"sweep/{name}/ads"] = ads_latency_s(s, costs, obs, o_max)
            fastest, slowest = ads_over_sizes_s(costs, obs)
            out[f"sweep/{name}/ads{FASTEST}"], out[f"sweep/{name}/ads{SLOWEST}"] = fastest, slowest
        return out


def sweep_points(setup: ZhuSetup, plan: ZhuPlan) -> Iterator[tuple[str, tuple[int, int, int]]]:
    """Figs. 7–8's sweep points of ``plan``: name (``K=…``, ``I_max=…``, ``O_max=…``; the
    default point once, as ``K=100``) → (K, I_max, O_max)."""
    default = (setup.num_users, setup.max_input_len, setup.max_output_len)
    for k in plan.num_users:
        yield f"K={k}", (k, setup.max_input_len, setup.max_output_len)
    for i_max in plan.max_inputs:
        point = (setup.num_users, i_max, setup.max_output_len)
        if point != default:
            yield f"I_max={i_max}", point
    for o_max in plan.max_outputs:
        if (setup.num_users, setup.max_input_len, o_max) != default:
            yield f"O_max={o_max}", (setup.num_users, setup.max_input_len, o_max)


def sweep_key(param: str, value: float, setup: ZhuSetup) -> str:
    """The sweep point holding ``param`` = value (the default point is ``K=100``)."""
    defaults = {"K": setup.num_users, "I_max": setup.max_input_len, "O_max": setup.max_output_len}
    if value == defaults[param]:
        return f"K={setup.num_users}"
    return f"{param}={int(value)}"
