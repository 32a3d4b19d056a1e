"""The AWC training set (DSD §4.4): simulated scenarios, each run at every static γ in 2..12
and in fused mode, labelled with the configuration that minimises a weighted objective.

A scenario (:class:`~edgespec.learn.awc.grid.AwcScenario`, drawn from the grid of
:mod:`edgespec.learn.awc.grid`) is one workload (acceptance traces of a dataset + its
prompt/output lengths, Poisson or closed-loop arrivals), one network (RTT, jitter,
bandwidth) and one deployment (draft model/hardware, target model/hardware, numbers of
drafts and targets).
:func:`run_awc_scenario` runs its 12 configurations and returns

- one row per configuration (:data:`CONFIG_COLUMNS`): mean TTFT, mean TPOT, throughput;
- decision contexts: the :class:`~edgespec.policies.interfaces.WindowObservation` s the
  window policy itself is shown in each run (a recording window that answers the static
  γ), ``contexts_per_run`` of them drawn uniformly (seeded) from the rounds that have an
  acceptance, turned into the WC-DNN's features by the policy's own
  :func:`~edgespec.policies.awc.awc_features`. Fused is encoded as γ = 1, as the
  configuration label and as the previous-γ feature of contexts from the fused run
  (SEED-NOTES §4.4 item 7). Fused runs are cloud-only (or, by choice, colocated rounds of
  ``fused_gamma`` drafted on the server); their contexts' RTT feature is the link's mean
  round trip (RTT + 2 × mean jitter), since a whole-run fused session measures none, and
  a cloud-only run's acceptance is the scenario's distributed one (it drafts nothing).

:func:`label_scenarios` gives each scenario its label: each metric is min-max normalised
across the scenario's configurations (throughput reversed, so 0 is best; a configuration
that finished no request scores 1), the weighted sum is minimised, ties go to the smaller
γ. Every context of a scenario gets the scenario's label. A scenario where no
configuration finished a request gets none (its runs were too short to tell).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.learn.awc.grid import MAX_BATCH_SIZE, AwcScenario, scenario_dict
from edgespec.policies.awc import FUSED_GAMMA, awc_features
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES

GAMMAS: tuple[int, ...] = tuple(range(2, 13))
"""The static windows every scenario runs with; plus fused (γ = 1)."""
CONFIGURATIONS: tuple[int, ...] = (FUSED_GAMMA, *GAMMAS)
DEFAULT_WEIGHTS: dict[str, float] = {"ttft": 0.25, "tpot": 0.5, "throughput": 0.25}
CONFIG_COLUMNS: tuple[str, ...] = (
    "scenario_id", "gamma", "ttft_s", "tpot_s", "throughput_tokens_per_s",
    "throughput_requests_per_s", "num_requests",
)  # fmt: skip
CONTEXT_COLUMNS: tuple[str, ...] = ("scenario_id", "run_gamma", *AWC_FEATURE_NAMES)


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
    """Scenario id → the γ (1 = fused) minimising the weighted normalised objective. A
    scenario where no configuration finished a request has no label (left out): its
    scores would tie, or rank throughput alone, and the tie would go to fused."""
    by_scenario: dict[int, list[int]] = {}
    for row, sid in enumerate(configs["scenario_id"]):
        by_scenario.setdefault(int(sid), []).append(row)
    labels = {}
    for sid, rows in by_scenario.items():
        if not any(configs["num_requests"][r] for r in rows):
            continue
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
