"""The engine's side of the SH (selective-hidden) upload: a verification kept waiting for
the client's draft hidden states.

A session whose rule reads the target's hidden states
(:class:`~edgespec.runtime.server.verification.HiddenStateRule`, the lossy ``"semantic"``
rule) gets them for its K + 1 logit rows (:func:`logit_hidden_rows`). When the rule answers
:class:`~edgespec.runtime.server.verification.HiddenStatesNeeded` (it needs the draft's
hidden states of some positions), :func:`judge_pass` keeps the forward pass as a
:class:`PendingHidden`, nothing is committed, and the client gets :func:`waiting_outcome`
(``VerifyOutcome.hidden_request``). The session's next call must be the follow-up with
those rows (:func:`check_followup_call`); it forwards nothing (:func:`followup_sizes`) and
is decided from the kept pass (:func:`decide_followup`) without another forward. The
:class:`~edgespec.runtime.server.engine.VerificationEngine` holds the pending pass on the
session, commits the verdicts and handles a failing rule; a session waiting for its
follow-up holds the pass's KV as its cache, in the LRU budget: evicted, the follow-up is
still decided from the kept logit and hidden rows, and the session re-prefills on its next
verification. A ``return_hidden`` session's pass also holds the hidden rows its reply
carries, counted in the budget beside the KV; evicted, its follow-up is refused
(``ABORTED``), nothing is committed, and the client sends the block again (the edge
drafter replays the round) — unless the pass alone held more than the budget: sent again,
it would hold as much or more (a re-prefill forwards the whole context), so that refusal is
final (``FAILED_PRECONDITION``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine_checks import check_followup
from edgespec.runtime.server.returned_hidden import num_unreturned
from edgespec.runtime.server.verification import HiddenStateRule, Verdict


@dataclass(frozen=True, slots=True, eq=False)
class PendingHidden:
    """A verification waiting for the client's draft hidden states (SH upload): its call,
    forward item and output (without KV: the session holds the pass's; with hidden rows
    only for a ``return_hidden`` session: those of its forwarded tokens from the first its
    reply carries on, :mod:`edgespec.runtime.server.returned_hidden`, a copy), the target's
    hidden rows of its K + 1 logit rows (a copy: never a view holding the whole context's
    rows), and the draft positions asked for. The ``return_hidden`` rows count against the
    engine's token budget; ``num_hidden_evicted``: how many it dropped (the follow-up is
    then refused, :func:`evicted_followup_error`), and ``over_budget``: (tokens it held,
    the budget) when it alone held more than the budget."""

    call: VerifyCall
    item: ForwardItem
    out: ForwardOutput
    target_hidden: npt.NDArray[np.float32]
    positions: tuple[int, ...]
    num_hidden_evicted: int = 0
    over_budget: tuple[int, int] | None = None


def pending_rows(pending: PendingHidden) -> int:
    """The ``return_hidden`` rows ``pending`` holds (0 without them, or once evicted)."""
    return 0 if pending.out.hidden is None else int(pending.out.hidden.shape[0])


def without_hidden_rows(pending: PendingHidden, num_held: int, budget: int) -> PendingHidden:
    """``pending`` with its ``return_hidden`` rows dropped (evicted under ``budget`` while
    its session held ``num_held`` tokens: KV and hidden rows)."""
    out = replace(pending.out, hidden=None)
    over = (num_held, budget) if num_held > budget else None
    return replace(pending, out=out, num_hidden_evicted=pending_rows(pending), over_budget=over)


def evicted_followup_error(pending: PendingHidden) -> RequestError:
    """The follow-up of a pass whose ``return_hidden`` rows the budget evicted: its reply
    cannot carry them, so nothing is committed and the block is to be sent again
    (``ABORTED``: not a client mistake; the edge drafter replays the round); final
    (``FAILED_PRECONDITION``) when the pass alone held more than the budget."""
    call = pending.call
    if pending.over_budget is not None:
        held, budget = pending.over_budget
        return RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"session {call.session_id!r}: the pass of its block at prefix_len "
            f"{call.prefix_len}, waiting for draft hidden states, held {held} tokens (KV and "
            f"{pending.num_hidden_evicted} target hidden rows, return_hidden), over "
            f"kv_budget_tokens {budget} alone: sent again it would not fit either; nothing was "
            "committed (raise kv_budget_tokens, or draft without target hidden states)",
        )
    return RequestError(
        ErrorCode.ABORTED,
        f"session {call.session_id!r}: the pass of its block at prefix_len {call.prefix_len}, "
        f"waiting for draft hidden states, lost its {pending.num_hidden_evicted} target hidden "
        "rows (return_hidden) under kv_budget_tokens; nothing was committed: send the block "
        "again",
    )


def failed_followup_error(call: VerifyCall, why: str) -> RequestError:
    """The follow-up ``call`` whose verdict failed to commit (``why``): its waiting pass is
    dropped with the session's cache, so nothing is committed and the block is to be sent
    again (``ABORTED``, as after an evicted pass)."""
    return RequestError(ErrorCode.ABORTED, f"session {call.session_id!r}: {why}, deciding the "
                        f"follow-up of its block at prefix_len {call.prefix_len}; nothing was "
                        "committed: send the block again")  # fmt: skip


def logit_hidden_rows(item: ForwardItem, out: ForwardOutput) -> npt.NDArray[np.float32]:
    """The target's hidden rows of the pass's logit rows (its last ``num_logits``
    positions): the last rows it returned (every forwarded token's, or with
    ``hidden_of_logits_only`` maybe just those); the pass must have returned hidden states."""
    assert out.hidden is not None and out.hidden.shape[0] >= item.num_logits
    return out.hidden[out.hidden.shape[0] - item.num_logits :]


def check_followup_call(call: VerifyCall, pending: PendingHidden, rule: HiddenStateRule) -> None:
    """Raise :class:`RequestError` unless ``call`` is the follow-up ``pending`` waits for:
    the same block (:func:`~edgespec.runtime.server.engine_checks.check_followup`) with
    what the rule asked for."""
    check_followup(call, pending.call, pending.positions)
    rule.check_followup(call, pending.positions)


def followup_sizes(pending: PendingHidden) -> tuple[int, int]:
    """(num_new_tokens, num_cached_tokens) of the follow-up: it forwards nothing, its pass
    is kept."""
    return 0, pending.item.kv_len + len(pending.item.new_token_ids)


def judge_pass(
    rule: HiddenStateRule,
    call: VerifyCall,
    sampling: SamplingParams,
    item: ForwardItem,
    out: ForwardOutput,
    rows: npt.NDArray[np.float32],
    returned_from: int | None,
) -> Verdict | PendingHidden:
    """The rule's verdict on a forward pass (``rows``: :func:`logit_hidden_rows`), or the
    pass kept until the client sends the draft hidden states the rule asked for (with the
    hidden rows of its forwarded tokens from position ``returned_from`` on, which its reply
    may carry, when the session has ``return_hidden``; ``None`` otherwise: see
    :mod:`edgespec.runtime.server.returned_hidden`). Raises what the rule raises."""
    judged = rule.verdict_hidden(call, sampling, out.rows, rows)
    if isinstance(judged, Verdict):
        return judged
    # what the rule reads at the follow-up, never a view of the whole batch's rows
    rows_kept = out.rows.own() if judged.kept_rows is None else judged.kept_rows
    # the pass's KV goes to the session (the engine's cache); the item's input KV is dropped
    hidden = None
    if returned_from is not None and out.hidden is not None:
        hidden = out.hidden[num_unreturned(item, returned_from) :].copy()  # not the batch's
    kept = replace(out, rows=rows_kept, kv=None, hidden=hidden)
    item_kept = replace(item, kv=None)
    return PendingHidden(call, item_kept, kept, rows.copy(), judged.positions)


def decide_followup(
    rule: HiddenStateRule,
    rule_name: str,
    pending: PendingHidden,
    sampling: SamplingParams,
    call: VerifyCall,
) -> Verdict | RequestError:
    """The verdict of a kept pass, now that ``call`` brought the hidden states; an
    ``INTERNAL`` error when the rule (served as ``rule_name``) asks again. Raises what the
    rule raises."""
    judged = rule.verdict_hidden(
        pending.call, sampling, pending.out.rows, pending.target_hidden, call
    )
    if isinstance(judged, Verdict):
        return judged
    return RequestError(
        ErrorCode.INTERNAL,
        f"verification rule {rule_name!r} asked session "
        f"{call.session_id!r} for hidden states twice",
    )


def waiting_outcome(pending: PendingHidden) -> VerifyOutcome:
    """The outcome of a verification waiting for hidden states: nothing committed; its
    result is the greedy prefix before the first position asked about."""
    call, logits, positions = pending.call, pending.out.rows, pending.positions
    draft = call.draft_token_ids
    first = positions[0] if positions else len(draft)
    result = VerifyResult(
        num_drafted=len(draft),
        num_accepted=first,
        first_rejection=first if first < len(draft) else None,
        extra_token=logits.argmax()[first],
        accepted_token_ids=tuple(draft[:first]),
    )
    num_forwarded, kv_len = len(pending.item.new_token_ids), pending.item.kv_len
    return VerifyOutcome(result, (), False, num_forwarded, None, kv_len, hidden_request=positions)
