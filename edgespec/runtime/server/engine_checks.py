"""What the verification engine refuses, and the message that says why: a session's
spec when it opens, a verify call before it is queued. Pure checks against the target
backend's limits; :class:`~edgespec.runtime.server.engine.VerificationEngine` calls them
(its session table, :mod:`edgespec.runtime.server.engine_sessions`, and its SH follow-ups,
:mod:`edgespec.runtime.server.hidden_followup`, included)."""

from __future__ import annotations

from collections.abc import Collection

from edgespec.runtime.backends.base import TargetBackend
from edgespec.runtime.errors import ErrorCode, RequestError, context_refusal
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall
from edgespec.runtime.server.verification import VerificationRule
from edgespec.runtime.validation import check_vocab


def check_session_spec(
    spec: SessionSpec, backend: TargetBackend, rules: Collection[str], budget_tokens: int
) -> None:
    """Raise :class:`RequestError` (``INVALID_ARGUMENT``) for an empty prompt, a prompt plus
    ``max_new_tokens`` beyond the target's context, a token outside its vocabulary, more
    prior output tokens than prompt tokens, prompt log-probabilities it cannot have
    (:func:`prompt_score_problem`; the engine's KV
    budget is ``budget_tokens``), or a verification rule this server does not serve
    (``rules``: the names it serves)."""
    if not spec.prompt_token_ids:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "prompt is empty")
    if not 0 <= spec.num_prior_output_tokens <= len(spec.prompt_token_ids):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"num_prior_output_tokens must be in [0, {len(spec.prompt_token_ids)}] (the "
            f"prompt's tokens), got {spec.num_prior_output_tokens}",
        )
    limit = backend.max_context_tokens
    needed = len(spec.prompt_token_ids) + spec.sampling.max_new_tokens
    if needed > limit:
        raise context_refusal(len(spec.prompt_token_ids), spec.sampling.max_new_tokens, limit)
    check_vocab(spec.prompt_token_ids, "prompt token", backend.vocab_size)
    check_vocab([t for t, _ in spec.sampling.logit_bias], "logit_bias token", backend.vocab_size)
    check_vocab(spec.sampling.stop_token_ids, "stop token", backend.vocab_size)
    if (problem := prompt_score_problem(spec, budget_tokens)) is not None:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, problem)
    if spec.return_hidden and (problem := getattr(backend, "hidden_state_problem", None)):
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"return_hidden: {problem}")
    if spec.verification_rule not in rules:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown verification rule {spec.verification_rule!r}; this server serves "
            f"{sorted(rules)}",
        )


def prompt_score_problem(spec: SessionSpec, budget_tokens: int) -> str | None:
    """Why a session asking for prompt log-probabilities cannot have them: a reopened
    session's (its prompt holds output), or a prompt (with its hidden rows for a
    ``return_hidden`` session) over the KV budget."""
    if spec.sampling.prompt_logprobs is None:
        return None
    if spec.num_prior_output_tokens:
        return "prompt_logprobs are returned for a session's first open only, not a reopen"
    held = len(spec.prompt_token_ids) * (2 if spec.return_hidden else 1)
    if held > budget_tokens:
        return (f"prompt_logprobs need the prompt ({held} tokens held) to fit the server's KV "
                f"budget ({budget_tokens} tokens)")  # fmt: skip
    return None


def check_verify_call(
    call: VerifyCall,
    num_committed: int,
    finished: bool,
    spec: SessionSpec,
    backend: TargetBackend,
    rule: VerificationRule,
    max_draft_tokens: int,
) -> None:
    """Raise :class:`RequestError` saying what is wrong with ``call`` on a session with
    ``num_committed`` committed tokens (``finished``: it generated its last token).

    An empty block is a plain target step, legal in any round: a stop predictor that
    rejects the first position sends one (WISP Eq. 25, K_θ = 0)."""
    k = len(call.draft_token_ids)
    if finished:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION, f"session {call.session_id!r} already finished"
        )
    if k > max_draft_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft block has {k} tokens; the limit is {max_draft_tokens}",
        )
    if call.prefix_len != num_committed:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"prefix_len {call.prefix_len} does not match session {call.session_id!r}, "
            f"which has {num_committed} committed tokens",
        )
    check_vocab(call.draft_token_ids, "draft token", backend.vocab_size)
    if call.prefix_len + k > backend.max_context_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"prefix ({call.prefix_len}) + draft ({k}) exceeds the target's context of "
            f"{backend.max_context_tokens}",
        )
    if call.draft_probs is not None and spec.sampling.greedy:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_probs are for sampled sessions; session {call.session_id!r} is greedy "
            "(temperature 0): send none",
        )
    tree_hidden = getattr(backend, "tree_hidden_problem", None)
    if call.draft_parents is not None and spec.return_hidden and tree_hidden:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"draft_parents: {tree_hidden} "
                           f"(session {call.session_id!r} asked for return_hidden): send a "
                           "chain")  # fmt: skip
    rule.check(call, spec.sampling, backend.vocab_size)


def same_block(call: VerifyCall, other: VerifyCall) -> bool:
    """``call`` sends the block of ``other``: the same ``prefix_len``, draft tokens and
    tree."""
    return (
        call.prefix_len == other.prefix_len
        and call.draft_token_ids == other.draft_token_ids
        and call.draft_parents == other.draft_parents
    )


def same_request(call: VerifyCall, other: VerifyCall) -> bool:
    """``call`` sends ``other`` again: the same block and the same named payloads (an SH
    follow-up carries the hidden states its first call did not). Its other fields are not
    compared; ``other``'s are the ones verified."""
    return same_block(call, other) and call.payloads.keys() == other.payloads.keys()


def check_followup(call: VerifyCall, asked: VerifyCall, positions: tuple[int, ...]) -> None:
    """``INVALID_ARGUMENT`` unless ``call`` resends the block of ``asked``, the call whose
    verification waits for the draft hidden states of ``positions`` (SH upload)."""
    if not same_block(call, asked):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"session {call.session_id!r} awaits the draft hidden states of positions "
            f"{list(positions)} for its block of {len(asked.draft_token_ids)} tokens at "
            f"prefix_len {asked.prefix_len}: resend that block with payload "
            f"{DRAFT_HIDDEN!r} holding those {len(positions)} rows",
        )
