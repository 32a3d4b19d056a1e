"""The one setting every ``edgespec reproduce dsd`` claim runs in (SEED-NOTES §4.2–4.4).

DSD does not state its load model, batch size, jitter, bandwidth, Dynamic window bounds,
or how drafts pair with targets; DSD-Sim's public code and shipped configurations give the
load model and the target capacity. They are chosen here once, for every claim, with the
reason beside each (:data:`CHOICES`, printed in REPORT.md); no claim tunes them.

The fleet is Fig. 5's: a cloud pool of 20 targets (LLaMA2-70B on A100, Qwen-72B on H100,
LLaMA3-70B on A6000, in shares 7/7/6, each at tensor-parallel 1 as DSD-Sim runs them) and
an edge pool of closed-loop drafts, half on A40 and half on V100, serving LLaMA2-7B, Qwen-7B
and LLaMA-3.1-8B (the ``llama3-8b`` preset) in equal shares. Table 2 uses the same pools
with 600 or 1,000 drafts. Every run exists in two cost modes: ``physical`` and
``dsdsim_compat`` (DSD-Sim's simplifications,
:data:`~edgespec.reproduce.dsd.choices.COMPAT_SIMPLIFICATIONS`); the choices' reasons are
:mod:`edgespec.reproduce.dsd.choices`'.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from edgespec.core.apportion import largest_remainder

DATASETS: tuple[str, ...] = ("gsm8k", "humaneval", "cnndm")
LENGTH_TABLES: dict[str, str] = {"gsm8k": "gsm8k", "humaneval": "humaneval", "cnndm": "sharegpt"}
"""Length table per dataset: GSM8K from DSD-Sim's own trace (``data/lengths/gsm8k.json``),
HumanEval from its canonical solutions; no CNN/DailyMail table can be built (the shared
prompt files hold no reference summaries), so CNN/DailyMail uses the long-output ShareGPT
table."""
TARGET_POOLS: tuple[tuple[str, str, int], ...] = (
    ("llama2-70b", "a100", 7),
    ("qwen-72b", "h100", 7),
    ("llama3-70b", "a6000", 6),
)
"""Fig. 5's target pool at tensor-parallel 1, as DSD-Sim's shipped configurations run every
target (one GPU of the paper's kind per server)."""
DRAFT_MODELS: tuple[str, ...] = ("llama2-7b", "qwen-7b", "llama3-8b")
DRAFT_HARDWARE: tuple[str, ...] = ("a40", "v100")

STACKS: dict[str, tuple[str, str, str]] = {
    "default": ("random", "fcfs", "static"),
    "s1": ("jsq", "fcfs", "static"),
    "s2": ("jsq", "lab", "static"),
    "s3": ("jsq", "lab", "dynamic"),
    "s4": ("jsq", "lab", "awc"),
}
"""Fig. 5's policy stacks: (routing, batching, window)."""

CostMode = Literal["physical", "dsdsim_compat"]
COST_MODES: tuple[CostMode, ...] = ("physical", "dsdsim_compat")
RoundMode = Literal["distributed", "cloud_only", "colocated"]
"""Where a session's rounds run: on the device (``distributed``); on the server as DSD
§4.4 and DSD-Sim define fused mode, one target token per pass (``cloud_only``); or as DSD
§3 reads, speculative rounds with a co-located draft (``colocated``, edgespec's extension,
shown beside the paper's two in D3 only)."""


@dataclass(frozen=True, slots=True)
class DsdSetup:
    """The chosen inputs (see :data:`CHOICES` for why each value). ``cost_mode``:
    ``physical`` (edgespec's costs) or ``dsdsim_compat`` (DSD-Sim's simplifications, each
    named in :data:`~edgespec.reproduce.dsd.choices.COMPAT_SIMPLIFICATIONS`)."""

    think_mean_s: float = 1.7
    think_cv: float = 0.6
    think_min_s: float = 0.22
    duration_s: float = 120.0
    jitter_share: float = 0.1
    bandwidth_mbps: float = 100.0
    max_batch_size: int = 12
    static_gamma: int = 4
    lab_max_length_ratio: float = 1.5
    seed: int = 4
    cost_mode: CostMode = "physical"
    fleet_share: float = 1.0
    """The share of the fleet a run simulates (targets and drafts alike; 1 = Fig. 5's 20
    targets; the quick run's smaller fleet keeps CI short)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def compat(self) -> bool:
        return self.cost_mode == "dsdsim_compat"


def _apportion(total: int, shares: int) -> list[int]:
    """``total`` split into ``shares`` near-equal integer parts (the first get the rest)."""
    base, rest = divmod(total, shares)
    return [base + (1 if i < rest else 0) for i in range(shares)]


def device_pools(num_drafts: int) -> list[dict[str, Any]]:
    """The edge pool: every (hardware, model) combination, as equal as integers allow."""
    combos = [(hw, model) for hw in DRAFT_HARDWARE for model in DRAFT_MODELS]
    counts = _apportion(num_drafts, len(combos))
    return [
        {"name": f"{model}-{hw}", "count": n, "draft_model": model, "hardware": hw}
        for (hw, model), n in zip(combos, counts, strict=True)
        if n > 0
    ]


def target_counts(share: float) -> list[int]:
    """Targets per pool of :data:`TARGET_POOLS` for ``share`` of the fleet: the total
    rounded (at least one per pool), split in proportion to the pools by largest remainder
    (with these pools' shares, at least one each)."""
    counts = [c for _, _, c in TARGET_POOLS]
    return largest_remainder(max(len(counts), round(sum(counts) * share)), counts)


def server_pools(setup: DsdSetup) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{model}-{hw}",
            "count": count,
            "target_model": model,
            "hardware": hw,
            "max_batch_size": setup.max_batch_size,
        }
        for (model, hw, _), count in zip(
            TARGET_POOLS, target_counts(setup.fleet_share), strict=True
        )
    ]


def window_policy(name: str, setup: DsdSetup) -> dict[str, Any]:
    if name == "static":
        return {"name": "static", "params": {"gamma": setup.static_gamma}}
    if name == "dynamic":
        return {"name": "dynamic", "params": {}}
    if name == "awc":
        return {"name": "awc", "params": {"queue_capacity": setup.max_batch_size}}
    raise ValueError(f"unknown window {name!r}; known: static, dynamic, awc")


def scenario(
    setup: DsdSetup,
    *,
    name: str,
    dataset: str,
    num_drafts: int,
    rtt_ms: float,
    stack: tuple[str, str, str] = STACKS["s2"],
    rounds: RoundMode = "distributed",
) -> dict[str, Any]:
    """One run: ``stack`` = (routing, batching, window) on the fleet with ``num_drafts``
    closed-loop drafts at ``rtt_ms``, the ``dataset``'s workload; every round ``rounds``
    (a fused decision of a distributed run's window policy is cloud-only)."""
    routing, batching, window = stack
    batching_policy: dict[str, Any] = {"name": batching}
    if batching == "lab":
        batching_policy["params"] = {"max_length_ratio": setup.lab_max_length_ratio}
    link = {
        "rtt_ms": rtt_ms,
        "jitter_ms": rtt_ms * setup.jitter_share,
        "bandwidth_mbps": setup.bandwidth_mbps,
    }
    workload: dict[str, Any] = {
        "kind": "closed_loop",
        "dataset": LENGTH_TABLES[dataset],
        "think_time_s": setup.think_mean_s,
        "think_distribution": "lognormal",
        "think_cv": setup.think_cv,
        "think_min_s": setup.think_min_s,
        "ramp_s": setup.think_mean_s,
    }
    data: dict[str, Any] = {
        "name": name,
        "seed": setup.seed,
        "duration_s": setup.duration_s,
        "mode": "distributed" if rounds == "distributed" else "fused",
        "fused_rounds": "colocated" if rounds == "colocated" else "cloud_only",
        "links": {"default": link},
        "auto_topology": {
            "devices": device_pools(max(1, round(num_drafts * setup.fleet_share))),
            "servers": server_pools(setup),
        },
        "policies": {
            "routing": {"name": routing},
            "batching": batching_policy,
            "window": window_policy(window, setup),
        },
        "acceptance": {"kind": "trace", "traces": [dataset]},
        "workload": workload,
    }
    if setup.compat:  # DSD-Sim's simplifications (COMPAT_SIMPLIFICATIONS)
        data["dsdsim_compat"] = {
            "one_pass_drafting": True,
            "fixed_rounds": True,
            "unqueued_fused": True,
        }
        data["cloud_only_draft_pass"] = data["fused_rounds"] == "cloud_only"
        data["record_rounds"] = True  # DSD-Sim's TPOT is taken over the rounds
        workload["arrivals_until_s"] = setup.duration_s
        data["duration_s"] = 2.0 * setup.duration_s  # the drain
    return data
