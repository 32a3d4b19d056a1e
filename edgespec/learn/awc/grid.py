"""The AWC training grid (DSD §4.4): its axes, a scenario (:class:`AwcScenario`: one
workload, one network, one deployment) drawn from them, and the simulator scenario of each
of its configurations (:func:`scenario_dict`). :mod:`edgespec.learn.awc.data` runs and
labels them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.policies.awc import FUSED_GAMMA

MAX_BATCH_SIZE = 12
"""Every target's batch limit, and the queue capacity the features are scaled by: the
reproduction's (DSD-Sim's target ``batch_size``, the cap that binds in its code:
:mod:`edgespec.reproduce.dsd.setup`), so the WC-DNN sees queue depths on the scale it is
evaluated on."""
DATASETS: tuple[str, ...] = ("gsm8k", "cnndm", "humaneval")
LENGTH_TABLES: dict[str, str] = {
    "gsm8k": "gsm8k",
    "cnndm": "sharegpt",
    "humaneval": "humaneval",
}
"""Length table per dataset when no workload trace gives its lengths (GSM8K: DSD-Sim's own
trace, bundled as ``data/lengths/gsm8k.json``; no CNN/DailyMail table can be built, the
shared prompt files hold no reference summaries: ShareGPT is the long-output stand-in)."""
DRAFTS: tuple[tuple[str, str], ...] = tuple(
    (model, hw) for hw in ("a40", "v100") for model in ("llama2-7b", "qwen-7b", "llama3-8b")
)
TARGETS: tuple[tuple[str, str], ...] = (
    ("llama2-70b", "4xa100"),
    ("qwen-72b", "4xh100"),
    ("llama3-70b", "4xa6000"),
)
"""DSD's deployment (Fig. 5, the paper's text): 7–8B drafts on A40/V100, 70B-class targets
on 4-GPU servers (the ``4x*`` hardware presets), the fleet ``edgespec reproduce dsd``
evaluates the WC-DNN on (DSD-Sim's tensor-parallel-1 targets are the reproduction's named
variant, where no AWC row runs)."""
RTTS_MS: tuple[float, ...] = (2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 80.0, 120.0)
JITTER_SHARES: tuple[float, ...] = (0.0, 0.1, 0.3)
BANDWIDTHS_MBPS: tuple[float, ...] = (10.0, 50.0, 100.0, 1000.0)
TARGET_COUNTS: tuple[int, ...] = (1, 2, 3, 4)
DRAFTS_PER_TARGET: tuple[int, ...] = (4, 8, 16, 32, 48)
RATES_PER_DRAFT: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4)
LOADS: tuple[str, ...] = ("poisson", "closed_loop")
"""How requests arrive: Poisson at ``rate_per_draft`` per draft, or DSD-Sim's closed loop
(each draft one conversation at a time, then a think time: :data:`THINK`)."""
THINK: dict[str, Any] = {
    "think_time_s": 1.7,
    "think_distribution": "lognormal",
    "think_cv": 0.6,
    "think_min_s": 0.22,
    "ramp_s": 1.7,
}
"""DSD-Sim's shipped think-time model (lognormal, mean 1.7 s, cv 0.6, at least 0.22 s)."""


@dataclass(frozen=True, slots=True)
class AwcScenario:
    """One point of the grid (see the module docstring)."""

    scenario_id: int
    dataset: str
    rtt_ms: float
    jitter_ms: float
    bandwidth_mbps: float
    draft_model: str
    draft_hardware: str
    target_model: str
    target_hardware: str
    num_targets: int
    num_drafts: int
    rate_per_draft: float
    duration_s: float
    seed: int
    load: str = "poisson"


def scenarios_text(count: int) -> str:
    """``"1 scenario"``, ``"4 scenarios"``: a count of scenarios as the commands say it."""
    return f"{count} scenario{'' if count == 1 else 's'}"


def is_reported_configuration(s: AwcScenario) -> bool:
    """Table 2's configurations (20 targets × 600 or 1,000 drafts × RTT 10 or 30 ms): kept
    out of the training grid so the AWC reported there is not trained on them."""
    return s.num_targets == 20 and s.num_drafts in (600, 1000) and s.rtt_ms in (10.0, 30.0)


def sample_scenario(scenario_id: int, seed: int, duration_s: float) -> AwcScenario:
    """Grid point ``scenario_id``: each axis drawn uniformly by a generator seeded with
    (seed, id), so a scenario does not depend on how many others are asked for."""
    rng = np.random.default_rng([seed, scenario_id])

    def pick(options: Sequence[Any]) -> Any:
        return options[int(rng.integers(len(options)))]

    rtt = float(pick(RTTS_MS))
    draft, target = pick(DRAFTS), pick(TARGETS)
    targets = int(pick(TARGET_COUNTS))
    return AwcScenario(
        scenario_id, pick(DATASETS), rtt, rtt * float(pick(JITTER_SHARES)),
        float(pick(BANDWIDTHS_MBPS)), draft[0], draft[1], target[0], target[1], targets,
        targets * int(pick(DRAFTS_PER_TARGET)), float(pick(RATES_PER_DRAFT)), duration_s,
        int(rng.integers(2**31)), pick(LOADS),
    )  # fmt: skip


def quick_scenarios(seed: int) -> list[AwcScenario]:
    """A handful of small scenarios for CI: one target, few drafts, 6 simulated s."""
    base = [sample_scenario(i, seed, 6.0) for i in range(4)]
    return [
        dataclasses.replace(s, num_targets=1, num_drafts=min(s.num_drafts, 8) if i else 4)
        for i, s in enumerate(base)
    ]


def full_scenarios(count: int, seed: int, duration_s: float) -> list[AwcScenario]:
    found = (sample_scenario(i, seed, duration_s) for i in range(count))
    return [s for s in found if not is_reported_configuration(s)]


def scenario_dict(
    s: AwcScenario,
    gamma: int,
    lengths: tuple[tuple[int, ...], tuple[int, ...]] | None,
    fused_rounds: str = "cloud_only",
) -> dict[str, Any]:
    """The simulator scenario of ``s`` at configuration ``gamma`` (1 = fused, its rounds
    ``fused_rounds``: DSD's ``cloud_only`` by default, one target token per pass; with
    ``colocated`` the recording window's γ is drafted by the server's co-located draft)."""
    workload: dict[str, Any] = {"kind": s.load, "dataset": LENGTH_TABLES[s.dataset]}
    if s.load == "poisson":
        workload["rate_per_s"] = s.num_drafts * s.rate_per_draft
    else:
        workload.update(THINK)
    if lengths is not None and s.dataset == "gsm8k":
        workload["prompt_tokens"], workload["output_tokens"] = lengths
    link = {"rtt_ms": s.rtt_ms, "jitter_ms": s.jitter_ms, "bandwidth_mbps": s.bandwidth_mbps}
    return {
        "name": f"awc-{s.scenario_id}-g{gamma}",
        "seed": s.seed,
        "duration_s": s.duration_s,
        "mode": "fused" if gamma == FUSED_GAMMA else "distributed",
        "fused_rounds": fused_rounds,
        "links": {"default": link},
        "auto_topology": {
            "devices": [
                {"count": s.num_drafts, "draft_model": s.draft_model, "hardware": s.draft_hardware}
            ],
            "servers": [
                {
                    "count": s.num_targets,
                    "target_model": s.target_model,
                    "hardware": s.target_hardware,
                    "max_batch_size": MAX_BATCH_SIZE,
                }
            ],
        },
        "policies": {"routing": {"name": "jsq"}, "batching": {"name": "fcfs"}},
        "acceptance": {"kind": "trace", "traces": [s.dataset]},
        "workload": workload,
    }
