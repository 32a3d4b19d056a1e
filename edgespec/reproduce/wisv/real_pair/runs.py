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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.learn.wisv.capture import Outcome
from edgespec.learn.wisv.decoding import target_reference
from edgespec.policies.semantic.head import DecisionHead
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.attention_mask import AttentionLayout
from edgespec.runtime.backends.base import DraftBackend, TargetBackend
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.edge.rounds import Verifier
from edgespec.runtime.edge.semantic import SemanticRequest
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply

CHANNELS: dict[str, float] = {"poor": 20e6, "good": 500e6}
"""V5's reported channels: uplink bit/s (Fig. 3's poor and good channels, Fig. 4's rates)."""
REPORTED_RTT_S = 0.050
"""V5's reported RTT (Table I's 50 ms)."""
GREEDY = "greedy"
WISV = "wisv"

Tick = Callable[[str], None]
"""Called after each generation with a short label (the progress bar)."""


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


@dataclass(frozen=True, slots=True, eq=False)
class Pair:
    """The loaded pair: the target (a causal LM, and its runtime backend over the same
    weights), a drafter that returns hidden states, the decision head, the task outcome
    (when an output is final, its answer), the target's EOS ids and attention layout."""

    target: Any
    backend: TargetBackend
    drafter: DraftBackend
    head: DecisionHead
    outcome: Outcome
    eos: frozenset[int]
    layout: AttentionLayout
    target_hidden_size: int


@dataclass(frozen=True, slots=True)
class PromptCase:
    """A prompt and its target-only output (``seconds``: the reference decoding's wall
    time)."""

    index: int
    ids: tuple[int, ...]
    reference: tuple[int, ...]
    answer: str | None
    seconds: float


@dataclass(frozen=True, slots=True)
class AnswerRun:
    """One speculative generation of one prompt."""

    prompt: int
    answer: str | None
    agrees: bool
    identical: bool
    """The output cut at its stop point equals the target-only output token by token."""
    stopped: bool
    """It stopped by a stop rule (final answer or EOS), not at ``max_new_tokens``."""
    num_tokens: int
    num_rounds: int
    seconds: float
    accepted_mismatches: int
    exchanges: int
    upload: str | None


def stop_prefix(
    output: Sequence[int], outcome: Outcome, eos: frozenset[int], max_new: int
) -> tuple[int, ...]:
    """The shortest prefix of ``output`` at which decoding stops (EOS, a final answer or
    ``max_new`` tokens); all of it when none does."""
    for k in range(1, len(output) + 1):
        prefix = tuple(output[:k])
        if prefix[-1] in eos or k >= max_new or outcome.finished(prefix):
            return prefix
    return tuple(output)


class StopAtAnswer:
    """A :class:`~edgespec.runtime.edge.rounds.Verifier` in front of ``inner`` that ends
    a session (``finished``) after the round whose committed tokens make the answer final
    by ``outcome``; EOS and the token budget stay the server's."""

    __slots__ = ("_outcome", "_outputs", "inner")

    def __init__(self, inner: Verifier, outcome: Outcome) -> None:
        self.inner = inner
        self._outcome = outcome
        self._outputs: dict[str, list[int]] = {}

    def open(self, spec: SessionSpec) -> None:
        self.inner.open(spec)
        self._outputs[spec.session_id] = []

    def verify(self, call: VerifyCall) -> VerifyReply:
        reply = self.inner.verify(call)
        output = self._outputs.setdefault(call.session_id, [])
        committed = reply.outcome.committed_token_ids
        output.extend(committed)
        if committed and not reply.outcome.finished and self._outcome.finished(output):
            return replace(reply, outcome=replace(reply.outcome, finished=True))
        return reply

    def close(self, session_id: str) -> None:
        self._outputs.pop(session_id, None)
        self.inner.close(session_id)


def target_only(
    pair: Pair, prompts: Sequence[tuple[int, Sequence[int]]], max_new: int, tick: Tick
) -> list[PromptCase]:
    """Each (index, ids) prompt's target-only output and answer, once."""
    cases = []
    for index, ids in prompts:
        start = time.perf_counter()
        ref = target_reference(pair.target, pair.layout, ids, max_new, pair.eos, pair.outcome)
        seconds = time.perf_counter() - start
        answer = pair.outcome.answer(ref.output)
        cases.append(PromptCase(index, tuple(ids), ref.output, answer, seconds))
        tick(f"target-only {index}")
    return cases


def answer_run(
    verifier: Verifier,
    pair: Pair,
    case: PromptCase,
    window: int,
    semantic: SemanticRequest | None,
    max_new: int,
    session_id: str,
) -> AnswerRun:
    """``case``'s prompt through ``verifier`` at static window ``window``, greedy SD when
    ``semantic`` is ``None``, stopping by the capture's rules."""
    pair.drafter.reset()
    result = generate(
        StopAtAnswer(verifier, pair.outcome),
        pair.drafter,
        case.ids,
        SamplingParams(max_new_tokens=max_new),
        DraftOptions(session_id),
        StaticWindow(window),
        semantic=semantic,
    )
    output = result.output_token_ids
    cut = stop_prefix(output, pair.outcome, pair.eos, max_new)
    answer = pair.outcome.answer(output)
    stopped = bool(cut) and (cut[-1] in pair.eos or pair.outcome.finished(cut))
    report = result.semantic
    record = result.request
    return AnswerRun(
        prompt=case.index,
        answer=answer,
        agrees=answer == case.answer,
        identical=cut == case.reference,
        stopped=stopped,
        num_tokens=len(output),
        num_rounds=len(result.rounds),
        seconds=record.finish_s - record.arrival_s,
        accepted_mismatches=0 if report is None else sum(report.accepted_mismatches),
        exchanges=len(result.rounds) if report is None else sum(report.exchanges),
        upload=None if report is None else report.upload,
    )


def summarise(runs: Sequence[AnswerRun]) -> dict[str, Any]:
    """A cell's metrics over its answers (module docstring)."""
    n = len(runs)
    tokens = sum(r.num_tokens for r in runs)
    rounds = sum(r.num_rounds for r in runs)
    seconds = sum(r.seconds for r in runs)
    uploads = sorted({r.upload for r in runs if r.upload is not None})
    return {
        "prompts": n,
        "agreement": sum(r.agrees for r in runs) / n if n else None,
        "identical": sum(r.identical for r in runs) / n if n else None,
        "aal": tokens / rounds if rounds else None,
        "rounds": rounds / n if n else None,
        "tokens_per_answer": tokens / n if n else None,
        "tokens_per_s": tokens / seconds if seconds > 0 else None,
        "latency_s": seconds / n if n else None,
        "latency_per_token_ms": 1e3 * seconds / tokens if tokens else None,
        "accepted_mismatches": sum(r.accepted_mismatches for r in runs) / n if n else None,
        "exchanges_per_round": sum(r.exchanges for r in runs) / rounds if rounds else None,
        "stopped": sum(r.stopped for r in runs) / n if n else None,
        "upload": uploads,
    }


def run_dict(run: AnswerRun) -> dict[str, Any]:
    return {
        "prompt": run.prompt,
        "answer": run.answer,
        "agrees": run.agrees,
        "identical": run.identical,
        "stopped": run.stopped,
        "tokens": run.num_tokens,
        "rounds": run.num_rounds,
        "seconds": round(run.seconds, 4),
        "accepted_mismatches": run.accepted_mismatches,
        "exchanges": run.exchanges,
        "upload": run.upload,
    }


def target_only_dict(cases: Sequence[PromptCase]) -> dict[str, Any]:
    tokens = sum(len(c.reference) for c in cases)
    seconds = sum(c.seconds for c in cases)
    return {
        "prompts": len(cases),
        "tokens_per_answer": tokens / len(cases) if cases else None,
        "tokens_per_s": tokens / seconds if seconds > 0 else None,
        "latency_s": seconds / len(cases) if cases else None,
        "answers_found": sum(c.answer is not None for c in cases),
        "answers": {str(c.index): c.answer for c in cases},
    }


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
    from edgespec.runtime.wire.grpc_server import ServerThread

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
