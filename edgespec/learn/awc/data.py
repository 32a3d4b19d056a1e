"""The AWC training set (DSD §4.4): simulated scenarios, each run at every static γ in 2..12
and in fused mode, labelled with the configuration that minimises a weighted objective.

A scenario (:class:`AwcScenario`) is one workload (acceptance traces of a dataset + its
prompt/output lengths, Poisson arrivals), one network (RTT, jitter, bandwidth) and one
deployment (draft model/hardware, target model/hardware, numbers of drafts and targets).
:func:`run_awc_scenario` runs its 12 configurations and returns

- one row per configuration (:data:`CONFIG_COLUMNS`): mean TTFT, mean TPOT, throughput;
- decision contexts: the :class:`~edgespec.policies.interfaces.WindowObservation` s the
  window policy itself is shown in each run (a recording window that answers the static
  γ), ``contexts_per_run`` of them drawn uniformly (seeded) from the rounds that have an
  acceptance, turned into the WC-DNN's features by the policy's own
  :func:`~edgespec.policies.awc.awc_features`. Fused is encoded as γ = 1, as the
  configuration label and as the previous-γ feature of contexts from the fused run
  (SEED-NOTES §4.4 item 7). Fused runs draft ``fused_gamma`` tokens co-located on the
  server (the simulator's fused mode); their contexts' RTT feature is the link's mean
  round trip (RTT + 2 × mean jitter), since a whole-run fused session measures none.

:func:`label_scenarios` gives each scenario its label: each metric is min-max normalised
across the scenario's configurations (throughput reversed, so 0 is best; a configuration
that finished no request scores 1), the weighted sum is minimised, ties go to the smaller
γ. Every context of a scenario gets the scenario's label.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.policies.awc import FUSED_GAMMA, awc_features
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES

GAMMAS: tuple[int, ...] = tuple(range(2, 13))
"""The static windows every scenario runs with; plus fused (γ = 1)."""
CONFIGURATIONS: tuple[int, ...] = (FUSED_GAMMA, *GAMMAS)
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
    ("llama2-70b", "a100"),
    ("qwen-72b", "h100"),
    ("llama3-70b", "a6000"),
)
"""DSD's deployments (Fig. 5): 7–8B drafts on A40/V100, 70B-class targets on 4-GPU
servers (the ``4x*`` hardware presets) and, as DSD-Sim's shipped configurations run them,
at tensor-parallel 1 (one GPU of each kind)."""
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
MAX_BATCH_SIZE = 32
DEFAULT_WEIGHTS: dict[str, float] = {"ttft": 0.25, "tpot": 0.5, "throughput": 0.25}
CONFIG_COLUMNS: tuple[str, ...] = (
    "scenario_id", "gamma", "ttft_s", "tpot_s", "throughput_tokens_per_s",
    "throughput_requests_per_s", "num_requests",
)  # fmt: skip
CONTEXT_COLUMNS: tuple[str, ...] = ("scenario_id", "run_gamma", *AWC_FEATURE_NAMES)


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


class RecordingWindow:
    """A static window that keeps every observation it is shown (not a StaticWindow, so
    the simulator builds the observations as it would for any adaptive policy)."""

    __slots__ = ("decision", "gamma", "seen")

    def __init__(self, gamma: int) -> None:
        self.gamma = gamma
        self.decision = WindowDecision(gamma)  # one object for every round
        self.seen: list[WindowObservation] = []

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.seen.append(obs)
        return self.decision


@dataclass(frozen=True, slots=True)
class AwcTask:
    """What a worker needs for one scenario (pickles for Ray)."""

    scenario: AwcScenario
    contexts_per_run: int = 8
    fused_gamma: int = 4
    lengths: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    fused_rounds: str = "cloud_only"


@dataclass(frozen=True, slots=True)
class ScenarioRows:
    scenario_id: int
    configs: dict[str, list[Any]]
    contexts: dict[str, list[Any]]
    seconds: float


def _contexts(
    seen: Sequence[WindowObservation], gamma: int, task: AwcTask, acceptance: float | None
) -> list[tuple[float, ...]]:
    """Up to ``contexts_per_run`` of the run's observations (seeded), as features. A fused
    run's contexts carry previous γ 1, the link's mean round trip as RTT and, where its
    rounds drafted nothing (cloud-only), ``acceptance`` (the scenario's distributed run at
    ``fused_gamma``): a device that switched to fused keeps its last distributed rounds'."""
    fused = gamma == FUSED_GAMMA
    filled = fused and acceptance is not None
    usable = [o for o in seen if o.recent_acceptance is not None or (filled and o.previous_gamma)]
    rng = np.random.default_rng([task.scenario.seed, gamma])
    chosen = sorted(rng.choice(len(usable), min(task.contexts_per_run, len(usable)), False))
    rows = []
    for i in chosen:
        features = awc_features(usable[int(i)], MAX_BATCH_SIZE)
        if fused:
            features[-1] = float(FUSED_GAMMA)
            # a whole-run fused session never measures the network; a device that switched
            # to fused keeps its last distributed round's RTT: the link's mean round trip
            features[2] = task.scenario.rtt_ms + 2.0 * task.scenario.jitter_ms
            if np.isnan(features[1]):
                features[1] = float(acceptance) if acceptance is not None else np.nan
        rows.append(tuple(float(x) for x in features))
    return rows


def _mean_acceptance(seen: Sequence[WindowObservation]) -> float | None:
    """The mean recent acceptance a run's observations saw (``None`` without one)."""
    values = [o.recent_acceptance for o in seen if o.recent_acceptance is not None]
    return float(np.mean(values)) if values else None


def run_awc_scenario(task: AwcTask) -> ScenarioRows:
    """All configurations of one scenario (module level: Ray pickles it)."""
    import time

    from edgespec.sim.setup.build import build_policies
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.simulator import simulate

    start = time.perf_counter()
    s = task.scenario
    configs: dict[str, list[Any]] = {name: [] for name in CONFIG_COLUMNS}
    contexts: dict[str, list[Any]] = {name: [] for name in CONTEXT_COLUMNS}
    seen: dict[int, list[WindowObservation]] = {}
    for gamma in CONFIGURATIONS:
        scenario = scenario_from_dict(scenario_dict(s, gamma, task.lengths, task.fused_rounds))
        window = RecordingWindow(task.fused_gamma if gamma == FUSED_GAMMA else gamma)
        policies = dataclasses.replace(build_policies(scenario), window=window)
        metrics = simulate(scenario, policies=policies, keep_records=False).metrics
        assert metrics is not None
        row = (
            s.scenario_id, gamma, metrics.ttft.mean_s if metrics.ttft else None,
            metrics.tpot.mean_s if metrics.tpot else None, metrics.throughput_tokens_per_s,
            metrics.throughput_requests_per_s, metrics.num_requests,
        )  # fmt: skip
        for name, value in zip(CONFIG_COLUMNS, row, strict=True):
            configs[name].append(value)
        seen[gamma] = window.seen
    acceptance = _mean_acceptance(seen.get(task.fused_gamma, []))
    for gamma in CONFIGURATIONS:
        for features in _contexts(seen[gamma], gamma, task, acceptance):
            for name, value in zip(CONTEXT_COLUMNS, (s.scenario_id, gamma, *features), strict=True):
                contexts[name].append(value)
    return ScenarioRows(s.scenario_id, configs, contexts, time.perf_counter() - start)


def _normalised(values: Sequence[float | None], higher_is_better: bool) -> list[float]:
    """Min-max over the configurations: 0 = best, 1 = worst (a missing value is worst)."""
    known = [v for v in values if v is not None and np.isfinite(v)]
    if not known:
        return [0.0] * len(values)
    low, high = min(known), max(known)
    out = []
    for v in values:
        if v is None or not np.isfinite(v):
            out.append(1.0)
        elif high == low:
            out.append(0.0)
        else:
            share = (v - low) / (high - low)
            out.append(1.0 - share if higher_is_better else share)
    return out


def label_scenarios(
    configs: Mapping[str, Sequence[Any]], weights: Mapping[str, float]
) -> dict[int, int]:
    """Scenario id → the γ (1 = fused) minimising the weighted normalised objective."""
    by_scenario: dict[int, list[int]] = {}
    for row, sid in enumerate(configs["scenario_id"]):
        by_scenario.setdefault(int(sid), []).append(row)
    labels = {}
    for sid, rows in by_scenario.items():
        ttft = _normalised([configs["ttft_s"][r] for r in rows], False)
        tpot = _normalised([configs["tpot_s"][r] for r in rows], False)
        thr = _normalised([configs["throughput_tokens_per_s"][r] for r in rows], True)
        scores = [
            (weights["ttft"] * a + weights["tpot"] * b + weights["throughput"] * c,
             int(configs["gamma"][r]))
            for a, b, c, r in zip(ttft, tpot, thr, rows, strict=True)
        ]  # fmt: skip
        labels[sid] = min(scores)[1]
    return labels


def workload_lengths(path: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(prompt, output) lengths of a workload trace JSONL (either schema), e.g. DSD-Sim's
    GSM8K trace, as an inline length table."""
    from edgespec.sim.setup.workload import load_trace

    entries = load_trace(path)
    return tuple(e.num_prompt_tokens for e in entries), tuple(e.num_output_tokens for e in entries)
