"""The prompt's log-probabilities a session asks for (``SamplingParams.prompt_logprobs``,
vLLM's): each prompt token after the first under the target's raw row at the position
before it, with the ``prompt_logprobs`` likeliest tokens'
(:func:`~edgespec.runtime.server.committed_logprobs.row_logprobs`), returned with the
session's first verification.

They are scored as the prompt is prefilled, in parts (:mod:`.prefill_parts`) of at most
:data:`SCORE_PART_TOKENS` tokens, each part's pass returning a row per token (at a
262,144-token vocabulary a row is 1 MB of float32: a part's rows are its memory, not the
prompt's). The prompt's last token is not scored (its row chooses the first output token),
so the first verification's own pass is as any other's. A session evicted between parts
starts its parts again and keeps the scores it has; its prompt must fit the KV budget
(:func:`~edgespec.runtime.server.engine_checks.prompt_score_problem`), or it would never finish."""

from __future__ import annotations

from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.server.committed_logprobs import row_logprobs
from edgespec.runtime.server.session_record import EngineSession

SCORE_PART_TOKENS = 128
"""The most prompt tokens one scoring pass forwards (and returns rows for)."""


def num_unscored(s: EngineSession) -> int:
    """How many of ``s``'s prompt tokens (before its last) are still to be scored: 0 once
    its first verification is done or when it asked for none."""
    if s.spec.sampling.prompt_logprobs is None or s.num_output_tokens or s.prompt_scores is None:
        return 0
    return len(s.spec.prompt_token_ids) - 1 - len(s.prompt_scores)


def score_part(s: EngineSession, item: ForwardItem, out: ForwardOutput) -> None:
    """Score the prompt tokens after ``item``'s positions (each row read once: a position
    scored before an eviction is not scored again)."""
    num_top = s.spec.sampling.prompt_logprobs
    scores = s.prompt_scores
    if num_top is None or scores is None:
        return
    rows, prompt = out.rows.host(), s.spec.prompt_token_ids
    for i, position in enumerate(range(item.kv_len, item.kv_len + len(item.new_token_ids))):
        if position == len(scores) and position + 1 < len(prompt):
            scores.append(row_logprobs(rows[i], prompt[position + 1], num_top))
