"""``edgespec reproduce wisv-real-pair``'s settings: the inputs the paper does not state
(or this stand-in needs), each with its reason, as REPORT.md prints them."""

from __future__ import annotations

from edgespec.reproduce.wisv.real_pair.runs import CHANNELS, REPORTED_RTT_S, Plan

TARGET = "gemma3-270m"
DRAFT = "gemma3-270m-draft"


def _common(plan: Plan) -> list[tuple[str, str]]:
    """The pair, the prompts, the quality measure, stopping, latency."""
    return [
        (
            "pair and head",
            f"{TARGET} target, {DRAFT} draft, the shipped head "
            "edgespec/data/wisv/gemma3-270m-head.json (trained on rollout captures of GSM8K "
            "train prompts 0–269, framed and unframed, and CNN/DM train prompts 0–39, local "
            "labels, repair budget keep-critical): the only pair with hidden states and "
            "critical labels in the project",
        ),
        (
            "prompts",
            f"the first {plan.prompts} GSM8K test prompts (held out from the head's "
            "training), framed with GSM8K_FRAME as most of its GSM8K training prompts; V6 "
            f"the first {plan.v6_prompts} of them: the full run takes about 20 minutes on one "
            "thread",
        ),
        (
            "quality measure",
            "agreement of the final answer (extract_answer) with the "
            "target-only answer: the prompt files hold no reference solutions, so target-only "
            "is 100% by definition; it stands in for the paper's GSM8K accuracy (80.4% "
            "target-only)",
        ),
        (
            "stopping",
            f"the capture's rules: EOS, {plan.max_new_tokens} new tokens, or the "
            "answer is final (a complete #### N line or the next Question:); a speculative run "
            "stops after the round that made it final, all of that round's tokens counted",
        ),
        (
            "latency",
            "per answer, from the session's opening to its last round (the "
            "paper's end-to-end latency), mean over prompts",
        ),
    ]


def _v5(plan: Plan) -> list[tuple[str, str]]:
    """V5's thresholds, channels, window and upload."""
    thresholds = ", ".join(str(t) for t in plan.thresholds)
    return [
        (
            "thresholds",
            f"T ∈ {{{thresholds}}}, τ = T/16 (the head's scale; Fig. 3 sweeps "
            "0 … > 15 and picks 12)",
        ),
        (
            "V5 channels",
            f"poor {CHANNELS['poor'] / 1e6:g} and good "
            f"{CHANNELS['good'] / 1e6:g} Mbit/s, PER 0, RTT {REPORTED_RTT_S * 1e3:g} ms "
            "reported as CSI (Fig. 4's rates, Table I's RTT); V5 runs in process without a "
            "link (the channel only enters through the head), so its tokens/s is compute "
            "only; T = 0 never reads the channel and runs once for both",
        ),
        (
            "V5 window and upload",
            f"static γ = {plan.v5_window} (the head's training "
            "window); FH (the same verdicts as SH, one exchange per round)",
        ),
    ]


def _v6(plan: Plan) -> list[tuple[str, str]]:
    """V6's link, methods and hardware."""
    return [
        (
            "V6 link",
            f"emulated link (EmulatedLinkVerifier) in front of loopback gRPC, RTT "
            f"{plan.link_rtt_ms:g} ms (Wi-Fi-like, > 10 ms so auto picks FH), no jitter (both "
            "methods see the same link), uplink = downlink = "
            + " and ".join(f"{r:g}" for r in plan.v6_rates_mbps)
            + " Mbit/s (the testbed's 20 m and 2 m averages), reported as CSI with RTT "
            f"{plan.link_rtt_ms:g} ms",
        ),
        (
            "V6 methods",
            f"greedy SD (exact verification, no hidden states) against WISV at "
            f"T = {plan.v6_threshold} (the paper's chosen threshold, kept although this pair's "
            "own is lower: V5) with upload auto, windows "
            + ", ".join(str(w) for w in plan.v6_windows)
            + ", each prompt back to back under both methods",
        ),
        (
            "V6 hardware",
            "a stand-in for Jetson AGX Orin + A40: drafter and server share this "
            "2-core CPU (one torch thread, one process; the server in a thread)",
        ),
    ]


def choices(plan: Plan) -> list[tuple[str, str]]:
    """The inputs the paper does not state (or this stand-in needs), with reasons."""
    return [*_common(plan), *_v5(plan), *_v6(plan)]
