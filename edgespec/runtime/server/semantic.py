"""WISV's semantic verification (seed 003): a lossy verification rule, served under the
name ``"semantic"`` only by a server given a decision head (``edgespec serve
--semantic-head FILE``), and only to sessions that ask for it by name.

Greedy verification localises the mismatches of a draft chain (positions j where the draft
token differs from the target's argmax after the committed prefix and the block's tokens
before j). For each mismatch the decision head (:mod:`edgespec.policies.semantic.head`)
reads x = [h_d ; h_t ; c] — the draft's and the target's last-layer hidden states (after
the final norm) at the input position whose logits predict token j, and the session's CSI
features (:mod:`edgespec.policies.semantic.csi`) — and rejects it iff p ≥ T/16, asked by
:func:`~edgespec.policies.semantic.judge.judge_mismatches` as WISV's in-process rollout
asks it (a head whose answer breaks its contract fails that call with ``INTERNAL``). The
earliest rejected mismatch ends the round: the tokens before it are committed (accepted
mismatching draft tokens included), then the target's argmax there (the correction). With
no rejected mismatch every draft token is committed, then the target's next token (the
bonus). T = 0 rejects every mismatch: standard greedy speculative decoding; T = 16
accepts every one (:func:`~edgespec.policies.semantic.head.rejected_at`); both are decided
without the hidden states (an SH session is never asked for them, as in the simulator).

The draft's hidden states come with the verify call (FH: one row per draft token) or, for
the mismatches only, in a follow-up call the server asks for
(:class:`~edgespec.runtime.server.verification.HiddenStatesNeeded`; SH). Greedy chains
only; a session sets its threshold and channel when it opens
(:class:`~edgespec.runtime.messages.SemanticSpec`). docs/RUNTIME.md, "Semantic (lossy)
verification (WISV)".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.core.types import FloatArray, SamplingParams, VerifyResult
from edgespec.policies.interfaces import SemanticHead
from edgespec.policies.semantic.csi import ChannelState, csi_count_problem
from edgespec.policies.semantic.head import THRESHOLD_STEPS, DecisionHead, load_head, rule_text
from edgespec.policies.semantic.judge import judge_mismatches
from edgespec.runtime.backends.logit_rows import ArgmaxRows, LogitRows
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall
from edgespec.runtime.server.verification import (
    EXACT_RULES,
    AnyRule,
    HiddenStatesNeeded,
    Verdict,
    refuse_payloads,
)

SEMANTIC = "semantic"
"""The rule's name (``SessionSpec.verification_rule``)."""

ALL_THRESHOLDS: frozenset[int] = frozenset(range(THRESHOLD_STEPS + 1))


def _invalid(message: str) -> RequestError:
    return RequestError(ErrorCode.INVALID_ARGUMENT, message)


def threshold_label(threshold: int) -> str:
    """``"12/16"``."""
    return f"{threshold}/{THRESHOLD_STEPS}"


@dataclass(frozen=True, slots=True, eq=False)
class SemanticVerification:
    """What a server serves under :data:`SEMANTIC`: binds each session that asks for it
    to a :class:`SemanticRule` with its own threshold and channel. ``thresholds``: the
    thresholds this server allows (all of 0..16 by default); ``target_hidden_size``, when
    given, must be the head's target width (checked here, before any session opens);
    ``head_sha256``: the head file's SHA-256 (hex), which Health says ("" when not known)."""

    head: SemanticHead
    thresholds: frozenset[int] = ALL_THRESHOLDS
    target_hidden_size: int | None = None
    head_sha256: str = ""

    def __post_init__(self) -> None:
        if problem := csi_count_problem(self.head.num_csi):
            raise ValueError(problem)
        outside = sorted(set(self.thresholds) - ALL_THRESHOLDS)
        if outside or not self.thresholds:
            raise ValueError(
                f"semantic thresholds must be a non-empty set of integers in "
                f"0..{THRESHOLD_STEPS}, got {sorted(self.thresholds)}"
            )
        if self.target_hidden_size not in (None, self.head.target_hidden):
            raise ValueError(
                f"the decision head takes target hidden states of width "
                f"{self.head.target_hidden}; the target's hidden size is "
                f"{self.target_hidden_size}"
            )

    @property
    def lossless(self) -> bool:
        return False

    def bind(self, spec: SessionSpec) -> SemanticRule:
        options = spec.semantic
        if options is None:
            raise _invalid(
                f"verification rule {SEMANTIC!r} needs the session's threshold and channel "
                "(OpenSessionRequest.semantic)"
            )
        if not spec.sampling.greedy:
            raise _invalid(
                f"semantic verification is greedy only; session {spec.session_id!r} samples "
                f"at temperature {spec.sampling.temperature}"
            )
        if spec.sampling.logprobs is not None or spec.sampling.prompt_logprobs is not None:
            raise _invalid("semantic verification returns no logprobs or prompt_logprobs")
        if spec.sampling.logit_bias or spec.sampling.penalized or spec.sampling.min_tokens:
            raise _invalid("semantic verification judges the target's own argmax: no "
                           "logit_bias, penalties or min_tokens")  # fmt: skip
        threshold = options.threshold
        if not 0 <= threshold <= THRESHOLD_STEPS:
            raise _invalid(f"semantic threshold {threshold} outside 0..16")
        if threshold not in self.thresholds:
            raise _invalid(
                f"semantic threshold {threshold} is not allowed on this server; it allows "
                f"{sorted(self.thresholds)}"
            )
        width = options.draft_hidden_size
        if width and width != self.head.draft_hidden:
            raise _invalid(
                f"session {spec.session_id!r}'s draft has hidden size {width}; the server's "
                f"decision head takes draft hidden states of width {self.head.draft_hidden} "
                "(a head trained for another draft)"
            )
        try:
            channel = ChannelState(options.uplink_bps, options.per, options.rtt_s)
        except ValueError as exc:
            raise _invalid(f"semantic channel: {exc}") from None
        return SemanticRule(self.head, threshold, channel)


@dataclass(frozen=True, slots=True, eq=False)
class SemanticRule:
    """One session's semantic rule (module docstring): its head, threshold T (reject a
    mismatch iff p ≥ T/16) and channel."""

    head: SemanticHead
    threshold: int
    channel: ChannelState

    @property
    def lossless(self) -> bool:
        return False

    @property
    def wants_hidden(self) -> bool:
        return True

    @property
    def labels(self) -> dict[str, Any]:
        """What every record of a semantic session carries."""
        return {"verification": SEMANTIC, "lossy": True, "threshold": self.threshold}

    def describe(self) -> str:
        """The server's log line for a session bound to this rule."""
        c = self.channel
        return (
            f"LOSSY semantic verification (threshold {threshold_label(self.threshold)}: "
            f"{rule_text(self.threshold)}; channel "
            f"uplink {c.uplink_bps / 1e6:g} Mbit/s, PER {c.per:g}, RTT {c.rtt_s * 1e3:g} ms)"
        )

    # --- checks

    def check(self, call: VerifyCall, sampling: SamplingParams, vocab_size: int) -> None:
        refuse_payloads(call, SEMANTIC, accepted=(DRAFT_HIDDEN,))
        if call.draft_parents is not None:
            raise _invalid("semantic verification takes draft chains only, not token trees")
        rows = call.payloads.get(DRAFT_HIDDEN)
        if rows is None:
            return  # SH: the server asks for the rows it needs
        k = len(call.draft_token_ids)
        self._check_width(rows)
        if rows.shape[0] != k:
            raise _invalid(
                f"{DRAFT_HIDDEN} has {rows.shape[0]} rows for {k} draft tokens: an FH call "
                "sends one row per draft token, an SH call none (the server asks for the rows "
                "it needs)"
            )
        self._check_finite(rows, tuple(range(k)))

    def check_followup(self, call: VerifyCall, positions: tuple[int, ...]) -> None:
        refuse_payloads(call, SEMANTIC, accepted=(DRAFT_HIDDEN,))
        rows = call.payloads.get(DRAFT_HIDDEN)
        if rows is None:
            raise _invalid(
                f"session {call.session_id!r} awaits the draft hidden states of positions "
                f"{list(positions)}: the follow-up call must carry payload {DRAFT_HIDDEN!r} "
                f"with those {len(positions)} rows"
            )
        self._check_width(rows)
        if rows.shape[0] != len(positions):
            raise _invalid(
                f"{DRAFT_HIDDEN} has {rows.shape[0]} rows; the server asked for the hidden "
                f"states of positions {list(positions)} ({len(positions)} rows)"
            )
        self._check_finite(rows, positions)

    def _check_width(self, rows: FloatArray) -> None:
        width = self.head.draft_hidden
        if rows.ndim != 2 or rows.shape[1] != width:
            raise _invalid(
                f"{DRAFT_HIDDEN} has shape {list(rows.shape)}; the server's decision head "
                f"takes draft hidden states of width {width} (rows x {width})"
            )

    @staticmethod
    def _check_finite(rows: FloatArray, positions: tuple[int, ...]) -> None:
        finite = np.isfinite(rows).all(axis=1)
        if not finite.all():
            row = int(np.argmin(finite))
            raise _invalid(
                f"{DRAFT_HIDDEN} row {row} (draft position {positions[row]}) has a non-finite value"
            )

    # --- verdicts

    def verdict(
        self,
        call: VerifyCall,
        sampling: SamplingParams,
        logits: LogitRows,
        rng: np.random.Generator,
    ) -> Verdict:
        raise TypeError("semantic verification needs the target's hidden states: verdict_hidden")

    def verdict_hidden(
        self,
        call: VerifyCall,
        sampling: SamplingParams,
        logits: LogitRows,
        target_hidden: npt.NDArray[np.float32],
        followup: VerifyCall | None = None,
    ) -> Verdict | HiddenStatesNeeded:
        draft = call.draft_token_ids
        k = len(draft)
        argmax = list(logits.argmax())
        mismatches = [j for j in range(k) if draft[j] != argmax[j]]
        if not mismatches or self.threshold == 0:  # T = 0 rejects every mismatch
            return _verdict(draft, argmax, mismatches[0] if mismatches else k, ())
        if self.threshold >= THRESHOLD_STEPS:  # T = 16 accepts every one (rejected_at)
            return _verdict(draft, argmax, k, tuple(mismatches))
        if followup is not None:
            rows = followup.payloads[DRAFT_HIDDEN]
        elif DRAFT_HIDDEN in call.payloads:
            rows = call.payloads[DRAFT_HIDDEN][mismatches]
        else:  # greedy: the follow-up reads only the rows' argmax
            return HiddenStatesNeeded(tuple(mismatches), ArgmaxRows(tuple(argmax)))
        if rows.shape[0] != len(mismatches):
            raise ValueError(f"{rows.shape[0]} draft hidden rows for {len(mismatches)} mismatches")
        rejected = judge_mismatches(
            self.head, rows, target_hidden[mismatches], self.channel, self.threshold
        )
        stop = next((j for j, r in zip(mismatches, rejected, strict=True) if r), k)
        return _verdict(draft, argmax, stop, tuple(j for j in mismatches if j < stop))


def _verdict(
    draft: tuple[int, ...], argmax: list[int], stop: int, mismatch_positions: tuple[int, ...]
) -> Verdict:
    """Commit ``draft[:stop]`` and the target's argmax at ``stop`` (a correction, or the
    bonus when ``stop`` is the block's length); ``mismatch_positions``: the accepted ones
    that differ from the argmax."""
    result = VerifyResult(
        num_drafted=len(draft),
        num_accepted=stop,
        first_rejection=stop if stop < len(draft) else None,
        extra_token=argmax[stop],
        accepted_token_ids=tuple(draft[:stop]),
    )
    return Verdict(result, mismatch_positions=mismatch_positions)


def semantic_rules(
    head: SemanticHead,
    thresholds: Collection[int] | None = None,
    target_hidden_size: int | None = None,
    head_sha256: str = "",
) -> Mapping[str, AnyRule]:
    """The rules of a server with a decision head: ``"exact"`` (every session's default)
    and ``"semantic"`` (``thresholds``: those allowed, all of 0..16 when ``None``;
    ``head_sha256``: the head file's, for Health)."""
    allowed = ALL_THRESHOLDS if thresholds is None else frozenset(thresholds)
    rule = SemanticVerification(head, allowed, target_hidden_size, head_sha256)
    return {**EXACT_RULES, SEMANTIC: rule}


def load_semantic_head(path: str | Path) -> DecisionHead:
    """The decision head saved at ``path`` (JSON); ``ValueError`` naming the file and what
    is wrong (:func:`~edgespec.policies.semantic.head.load_head`'s)."""
    return load_head(path)
