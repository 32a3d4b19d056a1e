"""The real pair's runs behind V5 and V6 (``edgespec reproduce wisv-real-pair``).

**Prompts and answers.** Held-out GSM8K *test* prompts (the head was trained on train
prompts), framed as in training (:func:`edgespec.learn.wisv.answers.framed_prompt`) and
encoded as the capture encodes them (BOS + the framed prompt's last tokens). Every output
stops by the capture's rules: EOS, ``max_new_tokens`` (128), or the answer is final
(:func:`~edgespec.learn.wisv.answers.answer_finished`: a complete ``#### N`` line or the
frame's next ``Question:``). The target-only answer of each prompt comes once from
:func:`~edgespec.learn.wisv.decoding.target_reference` (the capture's reference decoding).
A speculative run stops through :class:`StopAtAnswer`, which ends the session after the
round whose committed tokens make the answer final; that round's tokens all count (a
round cannot commit half its tokens), and :func:`stop_prefix` cuts the output back to
the stop point to compare it with the reference token by token.

**Metrics** (:func:`summarise`, SEED-NOTES §3.1 Eqs. 20–21): *agreement* — the share of
prompts whose final answer equals the target-only answer (the prompt files have no
reference solutions, so this stands in for accuracy; two "no number" answers agree);
*AAL* — committed tokens per round over all prompts, the correction or bonus token
included; *rounds* per answer; tokens/s — committed tokens over the answers' wall time.

**V5** (:func:`run_v5`): in process (:class:`~edgespec.runtime.wire.inprocess.
LocalVerifier`, no link), static window γ = 8 (the capture's), FH upload; per threshold
T and reported channel (20 or 500 Mbit/s, RTT 50 ms, PER 0) every prompt once. T = 0 never
consults the head (the rule rejects every mismatch before reading the channel), so it
runs once and stands for both channels.

**V6** (:func:`run_v6`): a loopback gRPC server in a thread of this process with the same
target and head, the drafter behind an :class:`~edgespec.runtime.wire.emulated_link.
EmulatedLinkVerifier` (RTT 20 ms, no jitter, the uplink rate of each setting; the device
reports that rate and RTT as its CSI); per rate, window and prompt greedy SD (exact
verification) and WISV at T = 12 with ``upload auto``, back to back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.reproduce.left_out import cut, missing, not_run, numbers
from edgespec.reproduce.wisv.real_pair.answers import (
    AnswerRun,
    Pair,
    PromptCase,
    Tick,
    answer_run,
    run_dict,
    summarise,
)
from edgespec.runtime.edge.semantic import SemanticRequest

CHANNELS: dict[str, float] = {"poor": 20e6, "good": 500e6}
"""V5's reported channels: uplink bit/s (Fig. 3's poor and good channels, Fig. 4's rates)."""
REPORTED_RTT_S = 0.050
"""V5's reported RTT (Table I's 50 ms)."""
GREEDY = "greedy"
WISV = "wisv"


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run covers (:meth:`full` or :meth:`quick`)."""

    prompts: int
    thresholds: tuple[int, ...]
    v6_prompts: int
    v6_rates_mbps: tuple[float, ...]
    v6_windows: tuple[int, ...]
    v5_window: int = 8
    v6_threshold: int = 12
    link_rtt_ms: float = 20.0
    max_new_tokens: int = 128
    max_prompt_tokens: int = 512

    def __post_init__(self) -> None:
        if self.v6_prompts > self.prompts:
            raise ValueError("V6's prompts are the first of V5's: v6_prompts <= prompts")
        if 0 not in self.thresholds:
            raise ValueError("V5 needs threshold 0 (the lossless reference point)")

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Plan:
        """The plan a results dict records (``run_all``'s ``plan``)."""
        lists = ("thresholds", "v6_rates_mbps", "v6_windows")
        fields: dict[str, Any] = {k: tuple(v) if k in lists else v for k, v in data.items()}
        return Plan(**fields)

    @staticmethod
    def full() -> Plan:
        return Plan(
            prompts=20,
            thresholds=(0, 4, 8, 12, 14, 16),
            v6_prompts=6,
            v6_rates_mbps=(172.0, 498.0),
            v6_windows=(4, 8, 16),
        )

    @staticmethod
    def quick() -> Plan:
        return Plan(
            prompts=2,
            thresholds=(0, 12),
            v6_prompts=1,
            v6_rates_mbps=(172.0,),
            v6_windows=(4, 16),
        )


def left_out(plan: Plan) -> list[str]:
    """What ``plan`` leaves out of :meth:`Plan.full`, read off the two plans: the thresholds,
    rates and windows it does not run, then the prompts it shortens; empty for the full
    plan."""
    full, out = Plan.full(), []
    if thresholds := missing(full.thresholds, plan.thresholds):
        out.append(not_run("V5 at T =", numbers(thresholds), f"T = {numbers(plan.thresholds)}"))
    if rates := missing(full.v6_rates_mbps, plan.v6_rates_mbps):
        kept = numbers(plan.v6_rates_mbps, "Mbit/s")
        out.append(not_run("V6 at", numbers(rates, "Mbit/s"), kept))
    if windows := missing(full.v6_windows, plan.v6_windows):
        out.append(not_run("V6 at γ =", numbers(windows), f"γ = {numbers(plan.v6_windows)}"))
    pairs = [("V5 (and target-only):", plan.prompts, full.prompts, "prompt"),
             ("V6:", plan.v6_prompts, full.v6_prompts, "prompt")]  # fmt: skip
    return out + [cut(*pair) for pair in pairs if pair[1] != pair[2]]


def _semantic_rules(pair: Pair) -> Any:
    from edgespec.runtime.server.semantic import semantic_rules

    return semantic_rules(pair.head, None, target_hidden_size=pair.target_hidden_size)


def run_v5(
    pair: Pair, cases: Sequence[PromptCase], plan: Plan, tick: Tick
) -> dict[str, Any]:  # fmt: skip
    """Fig. 3's curve: every threshold × reported channel over every prompt (module
    docstring; T = 0 once for both channels)."""
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.wire.inprocess import LocalVerifier

    verifier = LocalVerifier(VerificationEngine(pair.backend, rules=_semantic_rules(pair)))
    cells: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for threshold in plan.thresholds:
        channels = list(CHANNELS) if threshold > 0 else ["poor"]
        for channel in channels:
            request = SemanticRequest(threshold, CHANNELS[channel], 0.0, REPORTED_RTT_S, "fh")
            done = []
            for case in cases:
                sid = f"v5-T{threshold}-{channel}-{case.index}"
                run = answer_run(verifier, pair, case, plan.v5_window, request,
                                 plan.max_new_tokens, sid)  # fmt: skip
                done.append(run)
                runs.append({"threshold": threshold, "channel": channel, **run_dict(run)})
                tick(sid)
            names = [channel] if threshold > 0 else list(CHANNELS)
            for name in names:
                cells.append({
                    "threshold": threshold,
                    "channel": name,
                    "uplink_mbps": CHANNELS[name] / 1e6,
                    "shared": threshold == 0,
                    **summarise(done),
                })  # fmt: skip
    return {"window": plan.v5_window, "cells": cells, "runs": runs}


def run_v6(
    pair: Pair, cases: Sequence[PromptCase], plan: Plan, tick: Tick
) -> dict[str, Any]:  # fmt: skip
    """Figs. 6–7's stand-in: per rate and window, greedy SD and WISV over the emulated
    link (module docstring)."""
    from edgespec.config import from_dict
    from edgespec.policies.batching import FcfsBatching
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService
    from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation
    from edgespec.runtime.wire.grpc_client import RemoteVerifier
    from edgespec.runtime.wire.server_thread import ServerThread

    config = from_dict(ServerConfig, {"port": 0})
    rules = _semantic_rules(pair)

    def build() -> VerificationService:
        engine = VerificationEngine(pair.backend, rules=rules)
        return VerificationService(engine, config, FcfsBatching())

    cells: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    with ServerThread(build) as server:
        remote = RemoteVerifier(f"127.0.0.1:{server.port}", timeout_s=120.0)
        try:
            for rate in plan.v6_rates_mbps:
                link = LinkEmulation(plan.link_rtt_ms, 0.0, rate)
                verifier = EmulatedLinkVerifier(remote, link, np.random.default_rng(0))
                wisv = SemanticRequest(
                    plan.v6_threshold, rate * 1e6, 0.0, plan.link_rtt_ms / 1e3, "auto"
                )
                for window in plan.v6_windows:
                    done: dict[str, list[AnswerRun]] = {GREEDY: [], WISV: []}
                    for case in cases:
                        for method, semantic in ((GREEDY, None), (WISV, wisv)):
                            sid = f"v6-{rate:g}-{window}-{method}-{case.index}"
                            run = answer_run(verifier, pair, case, window, semantic,
                                             plan.max_new_tokens, sid)  # fmt: skip
                            done[method].append(run)
                            runs.append({"uplink_mbps": rate, "window": window,
                                         "method": method, **run_dict(run)})  # fmt: skip
                            tick(sid)
                    for method, found in done.items():
                        cells.append({
                            "uplink_mbps": rate,
                            "window": window,
                            "method": method,
                            "threshold": plan.v6_threshold if method == WISV else 0,
                            **summarise(found),
                        })  # fmt: skip
        finally:
            remote.close_channel()
    return {"link_rtt_ms": plan.link_rtt_ms, "cells": cells, "runs": runs}
