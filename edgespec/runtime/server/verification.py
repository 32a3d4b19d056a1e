"""Verification rules: how one verification's target logits become its verdict, and the
tokens it commits.

A session names its rule when it opens (:attr:`SessionSpec.verification_rule
<edgespec.runtime.messages.SessionSpec.verification_rule>`, default ``"exact"``). The
engine serves the rules it was given by name (``VerificationEngine(..., rules=...)``; default
:data:`EXACT_RULES`), refuses an unknown name when the session opens, and calls the
session's rule at two points of every verification:

1. ``check(call, sampling, vocab_size)`` when the call arrives, after the engine's own
   checks (session, prefix length, vocabulary, size): raise
   :class:`~edgespec.runtime.errors.RequestError` (``INVALID_ARGUMENT``) naming what is
   wrong — a missing draft distribution, a malformed tree, a payload the rule does not
   take (``call.payloads``: named per-token arrays, e.g. channel state for a semantic
   rule).
2. ``verdict(call, sampling, logits, rng)`` once, after the batched forward pass:
   ``logits`` (:class:`~edgespec.runtime.backends.base.LogitRows`) holds the K + 1 target
   rows of the call's K draft tokens (for a token tree, the root's row then one row per
   node), left on the backend's device: a rule takes ``logits.argmax()`` when that is all
   it needs, ``logits.host()`` only when it needs the values; ``rng`` is the session's
   own generator. It returns the :class:`Verdict`. The rows are the session's: its
   ``logit_bias`` added and its penalties made
   (:mod:`edgespec.runtime.server.logits_processing`).

:class:`ExactRule` (``"exact"``) is lossless: greedy chains and token trees by argmax,
sampled chains by speculative sampling, sampled trees (their nodes proposed for certain) by
its form for trees. A lossy rule is served only under its own name,
so a session gets it only by asking for it.

Two optional capabilities, used by the lossy ``"semantic"`` rule
(:mod:`edgespec.runtime.server.semantic`) and left alone by the exact one:

* :class:`SessionRuleFactory`: what the engine serves under a name may be a factory whose
  ``bind(spec)`` is called when a session opens (it refuses a spec it cannot serve with a
  :class:`~edgespec.runtime.errors.RequestError`) and returns that session's own rule.
* :class:`HiddenStateRule`: a rule whose ``wants_hidden`` is true gets the target's
  last-layer hidden states of its K + 1 logit rows (the engine asks the backend for them
  only for such sessions) through ``verdict_hidden``, which may answer
  :class:`HiddenStatesNeeded`: the engine then keeps the forward pass, commits nothing,
  and the session's next call must be the follow-up carrying the draft's hidden states of
  those positions (``check_followup`` checks it; ``verdict_hidden`` is called again with
  the original call and the follow-up, and must decide).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from edgespec.core.speculative import (
    DenseDrawn,
    DrawnRows,
    as_drawn,
    greedy_verify,
    greedy_verify_tree,
    stochastic_verify_drawn,
    stochastic_verify_tree,
)
from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.runtime.backends.logit_rows import LogitRows
from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.sampling import TargetProbs
from edgespec.runtime.validation import check_draft_probs, check_tree_call


@dataclass(frozen=True, slots=True)
class Verdict:
    """A verification's result and, for a token tree, its accepted path's node indices;
    ``mismatch_positions``: the draft positions of the accepted draft tokens that differ
    from the target's argmax (a lossy rule's; none for a lossless one), ascending."""

    result: VerifyResult
    path: tuple[int, ...] | None = None
    mismatch_positions: tuple[int, ...] = ()

    @property
    def accepted_mismatches(self) -> int:
        """How many accepted draft tokens differ from the target's argmax."""
        return len(self.mismatch_positions)

    def committed_mismatches(self, num_committed: int) -> int:
        """The accepted mismatches among the round's first ``num_committed`` tokens (an EOS
        or the token budget may cut the committed tokens short: those cut are not
        committed, so not counted); a chain's draft token j is its j-th committed token."""
        return sum(1 for j in self.mismatch_positions if j < num_committed)


@dataclass(frozen=True, slots=True)
class HiddenStatesNeeded:
    """No verdict yet: the rule needs the draft's hidden states of these draft positions
    (ascending), which the client sends in a follow-up call. ``kept_rows``: what of the
    pass's logit rows the rule reads at the follow-up (e.g. an
    :class:`~edgespec.runtime.backends.logit_rows.ArgmaxRows`), ``None``: all of them."""

    positions: tuple[int, ...]
    kept_rows: LogitRows | None = None


class VerificationRule(Protocol):
    """Turns a verification's target logits into its verdict (call order: module docstring)."""

    @property
    def lossless(self) -> bool:
        """Whether the committed tokens follow the target exactly (greedy: token for
        token; sampling: in distribution)."""
        ...

    def check(self, call: VerifyCall, sampling: SamplingParams, vocab_size: int) -> None: ...

    def verdict(
        self,
        call: VerifyCall,
        sampling: SamplingParams,
        logits: LogitRows,
        rng: np.random.Generator,
    ) -> Verdict: ...


@runtime_checkable
class SessionRuleFactory(Protocol):
    """Served under a name in place of a rule: binds each session that names it to its own
    rule when the session opens (module docstring)."""

    @property
    def lossless(self) -> bool: ...

    def bind(self, spec: SessionSpec) -> VerificationRule:
        """The session's rule; :class:`RequestError` (``INVALID_ARGUMENT``) naming what in
        ``spec`` this rule cannot serve."""
        ...


@runtime_checkable
class HiddenStateRule(VerificationRule, Protocol):
    """A rule that reads the target's hidden states and may ask the client for its own
    (module docstring)."""

    @property
    def wants_hidden(self) -> bool: ...

    def check_followup(self, call: VerifyCall, positions: tuple[int, ...]) -> None:
        """``INVALID_ARGUMENT`` unless ``call`` carries what :class:`HiddenStatesNeeded`
        asked for (the engine has checked it resends the same block)."""
        ...

    def verdict_hidden(
        self,
        call: VerifyCall,
        sampling: SamplingParams,
        logits: LogitRows,
        target_hidden: npt.NDArray[np.float32],
        followup: VerifyCall | None = None,
    ) -> Verdict | HiddenStatesNeeded:
        """``target_hidden`` holds one row per logit row (the target's last-layer hidden
        state at the position whose logits those are); ``followup``: the call that brought
        the hidden states a :class:`HiddenStatesNeeded` asked for."""
        ...


AnyRule = VerificationRule | SessionRuleFactory
"""What an engine serves under a name: a rule, or a factory of per-session rules."""


def bind_rule(rule: AnyRule, spec: SessionSpec) -> VerificationRule:
    """The rule a session opened with ``spec`` gets from ``rule``."""
    return rule.bind(spec) if isinstance(rule, SessionRuleFactory) else rule


def hidden_state_rule(rule: VerificationRule) -> HiddenStateRule | None:
    """``rule`` when it reads the target's hidden states (:class:`HiddenStateRule` with
    ``wants_hidden``), else ``None``. The engine asks once, when a session opens."""
    if isinstance(rule, HiddenStateRule) and rule.wants_hidden:
        return rule
    return None


def rule_labels(name: str, rule: VerificationRule) -> dict[str, Any]:
    """What the records of a session verified by ``rule`` (served as ``name``) carry:
    nothing for a lossless rule; for a lossy one ``verification`` (its name), ``lossy:
    true`` and the rule's own ``labels`` (e.g. the semantic threshold)."""
    if rule.lossless:
        return {}
    own: Mapping[str, Any] = getattr(rule, "labels", {})
    return {"verification": name, "lossy": True, **own}


def refuse_payloads(call: VerifyCall, rule: str, accepted: Collection[str] = ()) -> None:
    """``INVALID_ARGUMENT`` for payloads the rule named ``rule`` does not take."""
    extra = sorted(set(call.payloads) - set(accepted))
    if extra:
        more = f" and {len(extra) - 8} more" if len(extra) > 8 else ""
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"verification rule {rule!r} takes no payload(s) {extra[:8]}{more}"
            + (f"; it takes {sorted(accepted)}" if accepted else ""),
        )


@dataclass(frozen=True, slots=True)
class ExactRule:
    """Lossless verification: greedy chains and trees by argmax, sampled chains by
    speculative sampling with residual resampling, sampled trees by
    :func:`~edgespec.core.speculative.stochastic_verify_tree` (:mod:`edgespec.core.speculative`)."""

    @property
    def lossless(self) -> bool:
        return True

    def check(self, call: VerifyCall, sampling: SamplingParams, vocab_size: int) -> None:
        refuse_payloads(call, "exact")
        if call.draft_parents is not None:
            check_tree_call(call)
        elif not sampling.greedy and call.draft_token_ids:  # an empty block needs no q
            check_draft_probs(call, vocab_size)

    def verdict(
        self,
        call: VerifyCall,
        sampling: SamplingParams,
        logits: LogitRows,
        rng: np.random.Generator,
    ) -> Verdict:
        draft, parents = call.draft_token_ids, call.draft_parents
        if parents is not None:
            result, path = (
                greedy_verify_tree(draft, parents, list(logits.argmax()))
                if sampling.greedy
                else stochastic_verify_tree(
                    draft, parents, _target_probs(logits.host(), sampling), rng
                )
            )
            return Verdict(result, path)
        if sampling.greedy:
            return Verdict(greedy_verify(draft, list(logits.argmax())))
        return Verdict(_sampled_verdict(call, sampling, logits.host(), rng))


def _sampled_verdict(
    call: VerifyCall,
    sampling: SamplingParams,
    logits: npt.NDArray[np.float32],
    rng: np.random.Generator,
) -> VerifyResult:
    """Speculative sampling of ``call``'s chain against the target's ``logits``: a row's
    probabilities are computed only when the verifier reads it (:class:`TargetProbs`), a
    compact q (:class:`CompactProbs`) is read as it is held, densely at the rejected row."""
    draft, q = call.draft_token_ids, call.draft_probs
    q_shape = (0, logits.shape[1]) if q is None else q.shape
    if logits.shape[0] != len(draft) + 1 or q_shape != (len(draft), logits.shape[1]):
        raise ValueError(
            f"draft_probs has shape {q_shape}, target rows {logits.shape} (K={len(draft)})"
        )
    drawn: DrawnRows
    if isinstance(q, CompactProbs):
        drawn = q.drawn()
    else:
        drawn = DenseDrawn(as_drawn(np.zeros(q_shape) if q is None else q))
    return stochastic_verify_drawn(draft, drawn, _target_probs(logits, sampling), rng)


def _target_probs(logits: npt.NDArray[np.float32], sampling: SamplingParams) -> TargetProbs:
    """The target's rows as ``sampling`` draws from them, each computed when first read."""
    return TargetProbs(logits, sampling.temperature, sampling.top_p, sampling.top_k, sampling.min_p)


EXACT_RULES: Mapping[str, VerificationRule] = {"exact": ExactRule()}
"""The rules an engine serves unless told otherwise: lossless only."""


def ending_tokens(sampling: SamplingParams, eos: frozenset[int]) -> frozenset[int]:
    """The tokens a session's output ends at, committed: the target's ``eos`` (unless the
    session ignores them) and its ``stop_token_ids``."""
    return (frozenset() if sampling.ignore_eos else eos) | frozenset(sampling.stop_token_ids)


def cut_committed(tokens: Sequence[int], budget: int, eos: Collection[int]) -> list[int]:
    """``tokens`` cut to the token budget and after the first EOS."""
    committed = list(tokens[:budget])
    for i, tok in enumerate(committed):
        if tok in eos:
            return committed[: i + 1]
    return committed
