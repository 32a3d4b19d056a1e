"""The one setting every ``edgespec reproduce dsd`` claim runs in (SEED-NOTES §4.2–4.4).

DSD does not state its load, batch cap, jitter, bandwidth, Dynamic window bounds, or how
drafts pair with targets. They are chosen here once, for every claim, with the reason beside
each (:data:`~edgespec.reproduce.dsd.choices.CHOICES`, printed in REPORT.md); no claim tunes
them. The load is a closed loop whose think time is fitted once, by Little's law, to Table
2's GSM8K C1 Static cell (:mod:`edgespec.reproduce.dsd.load`).

The fleet is the paper's (Fig. 5's text): a cloud pool of 20 targets on 4-GPU servers
(LLaMA2-70B on 4×A100, Qwen-72B on 4×H100, LLaMA3-70B on 4×A6000, in shares 7/7/6) and an
edge pool of closed-loop drafts, half on A40 and half on V100, serving LLaMA2-7B, Qwen-7B
and LLaMA-3.1-8B (the ``llama3-8b`` preset) in equal shares. DSD-Sim's shipped
configurations run every target at tensor-parallel 1 (one GPU of each kind): that fleet is
the named variant ``dsdsim_tp1`` (D3 runs on both). Every run exists in two cost modes:
``physical`` and ``dsdsim_compat`` (DSD-Sim's simplifications,
:data:`~edgespec.reproduce.dsd.choices.COMPAT_SIMPLIFICATIONS`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from edgespec.core.apportion import largest_remainder
from edgespec.hardware.batch_pricing import BatchPricing
from edgespec.reproduce.dsd.load import LENGTH_TABLES, fitted_think_s

DATASETS: tuple[str, ...] = ("gsm8k", "humaneval", "cnndm")
Fleet = Literal["paper_4gpu", "dsdsim_tp1"]
FLEETS: dict[Fleet, tuple[tuple[str, str, int], ...]] = {
    "paper_4gpu": (
        ("llama2-70b", "4xa100", 7),
        ("qwen-72b", "4xh100", 7),
        ("llama3-70b", "4xa6000", 6),
    ),
    "dsdsim_tp1": (
        ("llama2-70b", "a100", 7),
        ("qwen-72b", "h100", 7),
        ("llama3-70b", "a6000", 6),
    ),
}
"""The target pools: (model, hardware preset, count). ``paper_4gpu``: the paper's text
(§5, Fig. 5: 4×A100, 4×H100, 4×A6000 servers), the primary setting; ``dsdsim_tp1``: DSD-Sim's
shipped configurations (``tensor_parallel: 1``, one GPU of each kind), the named variant."""
FLEET_NAMES: dict[Fleet, str] = {
    "paper_4gpu": "the paper's 4-GPU servers",
    "dsdsim_tp1": "DSD-Sim's TP-1 targets",
}
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

    think_mean_s: float = field(default_factory=fitted_think_s)
    think_cv: float = 0.6
    think_min_s: float = 0.22
    duration_s: float = 120.0
    jitter_share: float = 0.1
    bandwidth_mbps: float = 100.0
    max_batch_size: int = 12
    static_gamma: int = 4
    lab_max_length_ratio: float | None = 1.5
    batch_pricing: BatchPricing = "padded"
    """How every run's target batches are priced (:mod:`edgespec.hardware.batch_pricing`):
    padded batches, the padding LAB exists to minimise (DSD §5)."""
    seed: int = 4
    cost_mode: CostMode = "physical"
    fleet: Fleet = "paper_4gpu"
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
    """Targets per pool (7/7/6, both fleets) for ``share`` of the fleet: the total
    rounded (at least one per pool), split in proportion to the pools by largest remainder
    (with these pools' shares, at least one each)."""
    counts = [c for _, _, c in FLEETS["paper_4gpu"]]
    return largest_remainder(max(len(counts), round(sum(counts) * share)), counts)


def server_pools(setup: DsdSetup) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{model}-{hw}",
            "count": count,
            "target_model": model,
            "hardware": hw,
            "max_batch_size": setup.max_batch_size,
            "batch_pricing": setup.batch_pricing,
        }
        for (model, hw, _), count in zip(
            FLEETS[setup.fleet], target_counts(setup.fleet_share), strict=True
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


def _link(setup: DsdSetup, rtt_ms: float) -> dict[str, Any]:
    return {
        "rtt_ms": rtt_ms,
        "jitter_ms": rtt_ms * setup.jitter_share,
        "bandwidth_mbps": setup.bandwidth_mbps,
    }


def _workload(setup: DsdSetup, dataset: str) -> dict[str, Any]:
    """Closed-loop drafts with the fitted think time; first conversations spread over one
    mean think time."""
    return {
        "kind": "closed_loop",
        "dataset": LENGTH_TABLES[dataset],
        "think_time_s": setup.think_mean_s,
        "think_distribution": "lognormal",
        "think_cv": setup.think_cv,
        "think_min_s": setup.think_min_s,
        "ramp_s": setup.think_mean_s,
    }


def _policies(setup: DsdSetup, stack: tuple[str, str, str]) -> dict[str, Any]:
    routing, batching, window = stack
    batching_policy: dict[str, Any] = {"name": batching}
    if batching == "lab":
        batching_policy["params"] = {"max_length_ratio": setup.lab_max_length_ratio}
    return {
        "routing": {"name": routing},
        "batching": batching_policy,
        "window": window_policy(window, setup),
    }


def _with_compat(data: dict[str, Any], setup: DsdSetup) -> dict[str, Any]:
    """``data`` under DSD-Sim's simplifications (COMPAT_SIMPLIFICATIONS)."""
    data["dsdsim_compat"] = {
        "one_pass_drafting": True,
        "fixed_rounds": True,
        "unqueued_fused": True,
    }
    data["cloud_only_draft_pass"] = data["fused_rounds"] == "cloud_only"
    data["record_rounds"] = True  # DSD-Sim's TPOT is taken over the rounds
    data["workload"]["arrivals_until_s"] = setup.duration_s
    data["duration_s"] = 2.0 * setup.duration_s  # the drain
    return data


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
    """One run: ``stack`` = (routing, batching, window) on the setup's fleet with
    ``num_drafts`` closed-loop drafts at ``rtt_ms``, the ``dataset``'s workload; every round
    ``rounds`` (a fused decision of a distributed run's window policy is cloud-only)."""
    data: dict[str, Any] = {
        "name": name,
        "seed": setup.seed,
        "duration_s": setup.duration_s,
        "mode": "distributed" if rounds == "distributed" else "fused",
        "fused_rounds": "colocated" if rounds == "colocated" else "cloud_only",
        "links": {"default": _link(setup, rtt_ms)},
        "auto_topology": {
            "devices": device_pools(max(1, round(num_drafts * setup.fleet_share))),
            "servers": server_pools(setup),
        },
        "policies": _policies(setup, stack),
        "acceptance": {"kind": "trace", "traces": [dataset]},
        "workload": _workload(setup, dataset),
    }
    return _with_compat(data, setup) if setup.compat else data
