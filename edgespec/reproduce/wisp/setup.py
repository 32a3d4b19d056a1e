"""The WISP reproduction's setting: the inputs the paper leaves unstated, chosen once for
every claim (W1–W5), and the scenarios of the four systems compared.

Systems (one codebase, one simulator):

* ``wisp``: WISP the system (§5.1: "adds a predictor-guided drafting controller, an
  SLO-aware batch scheduler ... and an online verification-time estimator"): distributed
  SD, the rejection predictor at Table 10's MLP operating point (confusion stand-in,
  Table 11's Pi 5 time per draft pass), Algorithm 1 (:mod:`edgespec.policies.wisp`) on the
  Eq. 19 estimator of the verifier's profile, per-round token-speed deadlines (Eq. 6/12),
  prefix cache on;
* ``wisp-wc``: WISP with Algorithm 1 read as work-conserving (a request that does not fit is
  skipped, not the end of the batch; :mod:`edgespec.policies.wisp`), the open question
  being which reading Table 1 comes from;
* ``wisp-np``: the same without the rejection predictor (what shows the predictor's share);
* ``fcfs``: the same distributed system with first-come-first-served batching (Table 1 and
  Fig. 7's FCFS);
* ``sled``: SLED, distributed SD with FCFS and **no prefix cache** (every verification
  forwards the whole context again);
* ``centralized``: all generation on the server, continuous batching (FCFS), prefix cache on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from edgespec.policies.slo import ACCEPTANCE_PRIOR, ACCEPTANCE_PRIOR_TOKENS

SYSTEMS = ("wisp", "wisp-wc", "wisp-np", "fcfs", "sled", "centralized")
WISP_SYSTEMS = ("wisp", "wisp-wc", "wisp-np")
"""The systems that batch with Algorithm 1 (the late-request rule applies to them)."""
PREDICTOR_SYSTEMS = ("wisp", "wisp-wc")
"""The systems that run the rejection predictor at Table 10's point."""
CLASSES = {"c2": 2.0, "c4": 4.0, "c6": 6.0, "c8": 8.0}
"""WISP's four token-speed classes (tok/s); Table 2 numbers them 1–4 = 2, 4, 6, 8."""
MIXED = {name: 1.0 for name in CLASSES}
"""§5.3: each device is assigned one of the four classes at random, evenly."""
TABLE_10_MLP = (0.8011, 0.4250)
"""Table 10, MLP (3-layer): TP share of accepted tokens, FP share of first rejections."""
PI5_MLP_MS = 0.4590
"""Table 11: the MLP's mean single-sample latency on a Raspberry Pi 5, charged per pass."""
TARGET_PROFILES = {"qwen3-32b": "a100-qwen3-32b", "qwen3-14b": "a100-qwen3-14b-scaled"}


@dataclass(frozen=True, slots=True)
class WispSetup:
    """What WISP does not state, fixed here for every claim (reasons in :func:`choices`)."""

    mean_prompt_tokens: int = 525
    mean_output_tokens: int = 150
    length_spread: float = 0.5
    gamma: int = 4
    alpha: float = 0.6819
    draft_model: str = "qwen3-1.7b"
    device_profile: str = "edge-50tps"
    rtt_ms: float = 20.0
    bandwidth_mbps: float = 50.0
    max_batch_size: int = 256
    max_batch_tokens: int = 8192
    kv_budget_tokens: int = 200_000
    guard_s: float = 0.005
    predictor_tpr: float = TABLE_10_MLP[0]
    predictor_fpr: float = TABLE_10_MLP[1]
    predictor_overhead_ms: float = PI5_MLP_MS
    epsilon: float = 0.05
    duration_s: float = 300.0
    ramp_s: float = 10.0
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def mean_context_tokens(self) -> int:
        """A request's mean KV context over its life: prompt plus half its output."""
        return self.mean_prompt_tokens + self.mean_output_tokens // 2


def context_setting(setup: WispSetup) -> str:
    """Why the 4–8 tok/s centralized capacities are a setting: the full run's (the default
    setup's) mean context, and a shorter run's own."""
    chosen, own = WispSetup().mean_context_tokens, setup.mean_context_tokens
    mine = "" if own == chosen else f"; this run's is ≈{own}, not the one chosen"
    return (f"the mean context (≈{chosen} tokens) was chosen so that Table 12 gives the "
            f"paper's centralized capacities at 4–8 tok/s (SEED-NOTES §1.3){mine}")  # fmt: skip


def choices(setup: WispSetup) -> tuple[tuple[str, str], ...]:
    """The unstated inputs of ``setup``, each with the reason it was chosen."""
    return (*workload_choices(setup), *system_choices(setup))


def workload_choices(setup: WispSetup) -> tuple[tuple[str, str], ...]:
    """What the devices send: lengths, draft and acceptance, predictor, window, device,
    network."""
    lo_p, hi_p = (round(setup.mean_prompt_tokens * (1 + k * setup.length_spread)) for k in (-1, 1))
    lo_o, hi_o = (round(setup.mean_output_tokens * (1 + k * setup.length_spread)) for k in (-1, 1))
    context = setup.mean_context_tokens
    return (
        (
            "lengths",
            f"prompts of {lo_p}–{hi_p} tokens (mean {setup.mean_prompt_tokens}) and outputs of "
            f"{lo_o}–{hi_o} tokens (mean {setup.mean_output_tokens}), paired on a fixed "
            f"64-point grid: mean KV context ≈{context} tokens. SEED-NOTES' anchor: Table 12 "
            "gives the paper's centralized capacities at 4–8 tok/s when the mean context is "
            "≈570–625 tokens. One length for every class and system: the paper's 2 tok/s "
            "centralized capacity implies ≈1,070, which no single length gives.",
        ),
        (
            "draft model and acceptance",
            f"{setup.draft_model} (the paper does not say which draft Tables 1–3 use), i.i.d. "
            f"acceptance α = {setup.alpha}, at which a fixed K = 4 window accepts 42% of "
            "drafted tokens (Table 5, predictor OFF).",
        ),
        (
            "rejection predictor",
            f"part of WISP (§5.1, §5.2.1 credits it for the capacity gap): the MLP at Table "
            f"10's operating point, each drafted position kept with probability "
            f"{setup.predictor_tpr} if the target accepts it and {setup.predictor_fpr} "
            "otherwise (the confusion stand-in), the stopped token drafted and not sent "
            f"(Eq. 25), {setup.predictor_overhead_ms} ms per draft pass (Table 11, Pi 5 MLP). "
            "wisp-np is WISP without it; FCFS, SLED and centralized have none.",
        ),
        ("window", f"K = {setup.gamma} draft tokens per round (§4.4: follow-ups of 3–5)."),
        (
            "device",
            f"drafting at 50 tok/s, 20 ms per draft pass ({setup.device_profile}, Fig. 1: the "
            "one drafting speed the paper states), for every claim, W8 included.",
        ),
        ("network", f"{setup.rtt_ms:g} ms RTT, {setup.bandwidth_mbps:g} Mbps, no jitter."),
    )


def system_choices(setup: WispSetup) -> tuple[tuple[str, str], ...]:
    """The server and how it is measured: verifier, workload, WISP's open rules, capacity,
    runs."""
    return (
        (
            "verifier",
            "one A100; Qwen3-32B: Table 12's Eq. 19 fit; Qwen3-14B: Table 12 scaled by "
            "architecture ratios (profile a100-qwen3-14b-scaled, a stand-in). Batch limits "
            f"{setup.max_batch_size} sequences and {setup.max_batch_tokens} tokens (vLLM's "
            f"defaults); KV budget {setup.kv_budget_tokens} tokens (not binding). Its time is "
            "Eq. 19 itself, deterministic.",
        ),
        ("workload", "closed loop, no think time: a device asks again once it is served."),
        (
            "WISP",
            f"δ = {1000 * setup.guard_s:g} ms; N̂ᵛ = α̂·N_d (Eq. 5: accepted tokens only) with "
            f"α̂ the session's acceptance so far, shrunk towards {ACCEPTANCE_PRIOR:g} with the "
            f"weight of {ACCEPTANCE_PRIOR_TOKENS:g} drafted tokens; v̂ = marginal cost "
            "T̂({i}) − c, LST on the "
            "solo cost; the late-request rule below. Algorithm 1 as printed (stops at the "
            "first request that does not fit) is WISP; its work-conserving reading (skips "
            "it) runs beside it as wisp-wc in W4, a sensitivity (never judged).",
        ),
        (
            "capacity",
            f"ε = {100 * setup.epsilon:g}% of a class's finished requests below its speed; "
            "bisection over the device count; a class none of whose requests finished "
            "counts as violated.",
        ),
        (
            "runs",
            f"{setup.duration_s:g} simulated seconds (first requests spread over "
            f"{setup.ramp_s:g} s), seed {setup.seed}. Violation rates count the requests "
            "that finished inside the run; goodput is reported both ways (docs/METRICS.md): "
            "committed (every token verified inside the run, Table 3's definition, the one "
            "compared) and completed-request (tokens of finished requests only).",
        ),
    )


GRID_POINTS = 64


def length_grid(setup: WispSetup) -> tuple[list[int], list[int]]:
    """(prompt, output) pairs: each mean ± spread·mean on an even 64-point grid, outputs
    permuted (step 37, coprime with 64) so that lengths are not correlated."""

    def spread(mean: int, i: int) -> int:
        return round(
            mean * (1 - setup.length_spread + 2 * setup.length_spread * i / (GRID_POINTS - 1))
        )

    prompts = [spread(setup.mean_prompt_tokens, i) for i in range(GRID_POINTS)]
    outputs = [spread(setup.mean_output_tokens, (37 * i) % GRID_POINTS) for i in range(GRID_POINTS)]
    return prompts, outputs


def _server(setup: WispSetup, system: str, target: str) -> dict[str, Any]:
    """The one A100 verifying ``target`` (no prefix cache for SLED)."""
    return {
        "target_model": target,
        "hardware": "a100",
        "cost_model": {"kind": "wisp", "profile": TARGET_PROFILES[target]},
        "kv_budget_tokens": setup.kv_budget_tokens,
        "max_batch_size": setup.max_batch_size,
        "max_batch_tokens": setup.max_batch_tokens,
        "prefix_cache": system != "sled",
    }


def _batching(setup: WispSetup, system: str, target: str) -> dict[str, Any]:
    """Algorithm 1 (printed, or work-conserving for ``wisp-wc``) for the WISP systems, FCFS
    for the others."""
    if system not in WISP_SYSTEMS:
        return {"name": "fcfs"}
    params: dict[str, Any] = {"profile": TARGET_PROFILES[target], "guard_s": setup.guard_s}
    if system == "wisp-wc":
        params["work_conserving"] = True
    return {"name": "wisp", "params": params}


def _workload(setup: WispSetup) -> dict[str, Any]:
    prompts, outputs = length_grid(setup)
    return {
        "kind": "closed_loop",
        "prompt_tokens": prompts,
        "output_tokens": outputs,
        "think_time_s": 0.0,
        "ramp_s": setup.ramp_s,
    }


def scenario(
    setup: WispSetup,
    system: str,
    *,
    devices: int,
    slo_mix: dict[str, float],
    target: str = "qwen3-32b",
    record_rounds: bool = False,
    device_profile: str | None = None,
) -> dict[str, Any]:
    """The scenario (as a plain dict, ready for YAML) of ``system`` with ``devices`` edge
    devices whose SLO classes follow ``slo_mix`` (``device_profile``: the devices' Eq. 19
    profile instead of the setup's, a bundled name or a file)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; known: {list(SYSTEMS)}")
    device = {
        "count": devices,
        "draft_model": setup.draft_model,
        "cost_model": {"kind": "wisp", "profile": device_profile or setup.device_profile},
        "slo_mix": slo_mix,
    }
    data: dict[str, Any] = {
        "name": f"wisp-{system}-{target}",
        "seed": setup.seed,
        "duration_s": setup.duration_s,
        "mode": "centralized" if system == "centralized" else "distributed",
        "slo_classes": dict(CLASSES),
        "deadline_rule": "token_speed" if system in WISP_SYSTEMS else "pace",
        "links": {"default": {"rtt_ms": setup.rtt_ms, "bandwidth_mbps": setup.bandwidth_mbps}},
        "auto_topology": {"devices": [device], "servers": [_server(setup, system, target)]},
        "policies": {
            "routing": {"name": "round_robin"},
            "batching": _batching(setup, system, target),
            "window": {"name": "static", "params": {"gamma": setup.gamma}},
        },
        "acceptance": {"kind": "iid", "alpha": setup.alpha},
        "workload": _workload(setup),
        "record_rounds": record_rounds,
    }
    if system in PREDICTOR_SYSTEMS:
        data["stop_predictor"] = {
            "confusion_tpr": setup.predictor_tpr,
            "confusion_fpr": setup.predictor_fpr,
            "overhead_ms": setup.predictor_overhead_ms,
        }
    return data
