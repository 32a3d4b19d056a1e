"""The inputs ``edgespec reproduce dsd`` chooses, each with its reason (printed in every
REPORT.md), the alternatives shown beside them as sensitivities, and DSD-Sim's
simplifications that its ``dsdsim_compat`` cost mode applies, each by name. The values
themselves are :mod:`edgespec.reproduce.dsd.setup`'s."""

from __future__ import annotations

from edgespec.reproduce.dsd.load import fitted_think_s

COMPAT_SIMPLIFICATIONS: tuple[tuple[str, str], ...] = (
    (
        "one-pass drafting",
        "a round's γ draft tokens cost one draft pass (DSD-Sim asks its "
        "predictor for one iteration per round)",
    ),
    (
        "fixed rounds",
        "a round advances by the γ tokens it drafted whatever was accepted, no "
        "bonus token: a request takes ⌈output/γ⌉ rounds",
    ),
    (
        "wasted fused pass",
        "a cloud-only round also runs one co-located draft pass (DSD-Sim sets "
        "γ = 1 for a fused conversation)",
    ),
    (
        "unqueued fused rounds",
        "a fused round neither queues nor batches on its target: it runs alone at once at "
        "its own cost, beside the target's batch (DSD-Sim's fused_execute)",
    ),
    (
        "TPOT over accepting rounds",
        "TPOT = Σ round time / Σ accepted tokens over the rounds that accepted something (a "
        "cloud-only round counts its one token, and a fused round's time leaves out its "
        "downlink: DSD-Sim's fused rounds send nothing back), DSD-Sim's per-token samples "
        "pooled",
    ),
    (
        "drain",
        "arrivals stop at the horizon and the requests in flight finish; throughput "
        "counts them over the horizon",
    ),
)
"""``dsdsim_compat``: what DSD-Sim (``src/sim.py``) simplifies, each by name; the first
four are the simulator's ``dsdsim_compat`` and ``cloud_only_draft_pass`` settings, the
last two how the run is measured."""

SENSITIVITIES: tuple[tuple[str, str], ...] = (
    (
        "the variant fleet (D3 only)",
        "DSD-Sim's shipped targets at tensor-parallel 1 (`a100`, `h100`, `a6000`; 98.7 / 63.9 "
        "/ 264.6 ms a pass, a 70B model's weights priced as if they fit one GPU) in place of "
        "the paper's 4-GPU servers: D3's rows on it show the crossover with their would-be "
        "verdicts in the note, not judged; D3 is judged on the paper's fleet alone",
    ),
)
"""Alternatives to a chosen input shown beside it (REPORT.md's *Sensitivities*), where the
plan runs them: never judged, never used to choose."""

BATCH_CAP = (
    "at most 12 rounds per target batch: DSD-Sim has two caps, the scheduler's "
    "`max_batch_requests: 6` and each target's `batch_size: 12` (11–14 by tier; "
    "experiments/configs/explorer/baseline_trace_gsm8k.yaml lines 70, 78, 97), and the "
    "target's binds: the scheduler (src/sim.py at 1e746d8, PhaseScheduler, lines 3377–3420) "
    "takes at most 6 jobs per 0.8 ms dispatch and only enqueues them on their targets "
    "(_dispatch_batch_proc, line 3544: target.enqueue, no wait for the batch), so a busy "
    "target's queue collects several dispatches, and the target's serving loop "
    "(TargetServer._serve_loop, line 1644: `while len(batch) < tp.batch_size`) forms its "
    "batch from that queue up to batch_size"
)
"""The batch cap and why it is the target's, cited by DSD-Sim file and line."""

CHOICES: tuple[tuple[str, str], ...] = (
    (
        "load",
        "closed loop, as DSD-Sim runs its drafts: each draft runs one conversation at a "
        "time and starts the next after a think time, lognormal with cv 0.6, at least "
        f"0.22 s (DSD-Sim's shape) and mean {fitted_think_s():.2f} s, fitted once by "
        "Little's law to Table 2's GSM8K C1 Static cell (600 drafts / 25.8 req/s − "
        "(352 ms + 40.1 ms × 136.75 tokens after the first of GSM8K's 137.75-token mean "
        "answer)); every other cell is judged against it (DSD-Sim ships 1.7 s; the paper "
        "states none). First conversations start uniformly over the first mean think "
        "time. Throughput follows TPOT: it is not an input",
    ),
    (
        "targets",
        "the paper's fleet (§5, Fig. 5): 7 LLaMA2-70B on 4×A100, 7 Qwen-72B on 4×H100, 6 "
        "LLaMA3-70B on 4×A6000 (roofline presets `4xa100`, `4xh100`, `4xa6000`; one pass "
        "27.8 / 19.1 / 69.2 ms)",
    ),
    ("batch cap", BATCH_CAP),
    (
        "duration",
        "120 simulated seconds per run, past three closed-loop cycles (quick: 40 s on a "
        "quarter of the fleet, 5 targets and a quarter of each draft count, inside the "
        "start-up transient: every quick row is marked not comparable); means over the run",
    ),
    ("jitter", "exponential, mean 10% of the RTT (not stated)"),
    ("bandwidth", "100 Mbit/s each way (not stated)"),
    ("Static", "γ = 4 (the paper's Static)"),
    (
        "Dynamic ('Simple')",
        "γ starts at 4, +1 above 0.75 recent acceptance, −1 below 0.25, in [1, 8] "
        "(bounds not stated; edgespec's DynamicWindow defaults)",
    ),
    (
        "fused mode",
        "cloud_only, as DSD §4.4, Fig. 6 and DSD-Sim run it: the target decodes one token "
        "per pass, no per-round network; AWC chooses between distributed and cloud-only "
        "(the paper's two-way choice). D3 also shows edgespec's colocated rounds (DSD §3's "
        "reading: speculative rounds with a co-located draft) beside them",
    ),
    (
        "AWC",
        "the shipped WC-DNN (edgespec/data/awc/wc-dnn.json), trained by `edgespec train "
        "awc` on `edgespec train awc-data` scenarios of the fleet it is evaluated on "
        "(4-GPU targets, batch cap 12, fused = cloud-only), which exclude every Table 2 "
        "configuration (20 targets × 600/1,000 drafts × RTT 10/30 ms)",
    ),
    (
        "LAB",
        "a batch takes the head-of-line request and the queued requests within 1.5× of its "
        "length (the bound is not stated; D7's note sweeps 1.25×, 2×, 3× and none beside it)",
    ),
    (
        "batch pricing",
        "every run prices padded batches (`batch_pricing: padded`: each row pays the "
        "batch's longest cached context and longest new block, as padded batched kernels "
        "do), the padding LAB exists to minimise (DSD §5), so every D2 link and D7's TPOT "
        "row can be judged",
    ),
    (
        "drafts",
        "half A40 half V100 over LLaMA2-7B, Qwen-7B, LLaMA-3.1-8B; a draft may be routed to "
        "any target (family pairing not modelled)",
    ),
    (
        "acceptance",
        "the bundled per-dataset traces (Gemma 3 270M with its distilled draft), the same "
        "for every draft–target pair: the paper's per-pair acceptance was not published",
    ),
    (
        "lengths",
        "GSM8K: DSD-Sim's own 400-request trace; HumanEval: canonical solutions; "
        "CNN/DailyMail: the ShareGPT table (no CNN/DailyMail reference summaries ship)",
    ),
    (
        "cost modes",
        "every claim runs twice: `physical` (edgespec's costs) and `dsdsim_compat` "
        "(DSD-Sim's simplifications: "
        + "; ".join(f"{name}: {what}" for name, what in COMPAT_SIMPLIFICATIONS)
        + ")",
    ),
    (
        "throughput",
        "completed requests per simulated second (compat: over the horizon, drain "
        "included); TTFT and TPOT are means over completed requests (compat TPOT: DSD-Sim's)",
    ),
    (
        "TTFT",
        "as DSD-Sim measures it (src/sim.py: first token − conversation start), from when "
        "the draft device takes the request up",
    ),
)
