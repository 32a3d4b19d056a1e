"""Committing a verdict into its session (:class:`~edgespec.runtime.server.engine.
VerificationEngine`): the committed tokens cut to the session's budget, its EOS (unless
it ignores EOS) and its stop ids, the KV
cropped to what stays valid (the accepted draft tokens' entries; a token tree's accepted
path), and the :class:`~edgespec.runtime.messages.VerifyOutcome` its reply carries, with the
target's hidden rows a ``return_hidden`` session's client lacks
(:mod:`edgespec.runtime.server.returned_hidden`) and the committed tokens' log-probabilities
a session asks for (:mod:`edgespec.runtime.server.committed_logprobs`), and with its first
verification its prompt's (:mod:`edgespec.runtime.server.prompt_logprobs`)."""

from __future__ import annotations

from edgespec.runtime.backends.base import ForwardItem, ForwardOutput, TargetBackend
from edgespec.runtime.messages import VerifyCall, VerifyOutcome
from edgespec.runtime.server.committed_logprobs import committed_logprobs
from edgespec.runtime.server.returned_hidden import first_returned_position, returned_rows
from edgespec.runtime.server.session_record import EngineSession
from edgespec.runtime.server.verification import Verdict, cut_committed, ending_tokens


def commit_verdict(
    s: EngineSession,
    call: VerifyCall,
    item: ForwardItem,
    out: ForwardOutput,
    judged: Verdict,
    backend: TargetBackend,
    keep_cache: bool,
) -> VerifyOutcome:
    """Commit ``judged`` (the verdict on ``call``'s pass ``item``/``out``) into ``s``: its
    tokens, output count, ``finished``, and its KV when ``keep_cache`` (the engine keeps a
    prefix cache and ``s`` is still open) and ``s`` goes on; the round's outcome."""
    sampling, draft = s.spec.sampling, call.draft_token_ids
    result, path = judged.result, judged.path
    budget = sampling.max_new_tokens - s.num_output_tokens
    eos = ending_tokens(sampling, backend.eos_token_ids)
    committed = cut_committed(result.committed_token_ids, budget, eos)
    old_total = len(s.tokens)
    s.tokens.extend(committed)
    s.num_output_tokens += len(committed)
    s.finished = s.num_output_tokens >= sampling.max_new_tokens or (
        bool(committed) and committed[-1] in eos
    )
    accepted = path if path is not None else tuple(range(result.num_accepted))
    kv_nodes = accepted[: max(len(committed) - 1, 0)]  # the newest token is forwarded next
    if keep_cache and not s.finished and out.kv is not None:  # None: a kept pass's KV evicted
        s.kv_len = old_total + len(kv_nodes)
        if path is None:
            s.kv = backend.crop(out.kv, s.kv_len)
        else:  # keep the accepted path's entries, drop the other branches
            keep = [*range(old_total), *(old_total + i for i in kv_nodes)]
            s.kv = backend.gather(out.kv, keep)
    else:
        s.kv, s.kv_len = None, 0
    first_row = first_returned_position(s.last_round is not None, call.prefix_len)
    rows = out.hidden if s.spec.return_hidden else None  # forwarded, now committed
    hidden, start = returned_rows(rows, item, len(draft), accepted[: len(committed)], first_row)
    num_top = sampling.logprobs
    logprobs = None if num_top is None else committed_logprobs(out.rows, committed, path, num_top)
    scores = s.prompt_scores  # scored before this first verification; kept for a resend
    s.prompt_scores = None  # in the stored round
    return VerifyOutcome(
        result,
        tuple(committed),
        s.finished,
        len(item.new_token_ids),
        hidden,
        start,
        path,
        accepted_mismatches=judged.committed_mismatches(len(committed)),
        logprobs=logprobs,
        prompt_logprobs=None if scores is None else tuple(scores),
    )
