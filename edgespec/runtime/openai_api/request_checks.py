"""What the endpoint refuses of a request before it waits for a worker, against what the
drafter and the servers can do (:func:`~.generation.prepare` calls them): a mode the
endpoint cannot run, an SLO class the servers lack, a prompt and ``max_tokens`` beyond the
target's context, a response holding more log-probabilities than
:data:`MAX_LOGPROB_ENTRIES`. Each refusal is a 400 naming the field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgespec.runtime.openai_api.errors import context_exceeded, invalid, shown
from edgespec.runtime.openai_api.prompts import prompt_param
from edgespec.runtime.openai_api.schema import ParsedRequest

MAX_LOGPROB_ENTRIES = 1 << 17
"""The most log-probabilities one response holds: n × (echoed prompt tokens + max_tokens) ×
(1 + logprobs) of them, each ~50 bytes of JSON (about 6 MiB), built in the endpoint's
memory. A request of a few kilobytes asked 17 MB (n 16, echo, logprobs 20, a 2,000-token
prompt) and eight such held the device's endpoint at 1.5 GB."""


def check_mode(config: Any, drafts: bool, request: ParsedRequest) -> None:
    """``edgespec.mode`` against the endpoint (``drafts``: it loaded a drafter): a
    distributed request needs one (an endpoint started with ``--mode centralized`` has
    none); a centralized one does not cross the emulated link, which delays drafted rounds
    only."""
    from edgespec.runtime.wire.emulated_link import link_from_config

    if request.mode == "distributed":
        if not drafts:
            raise invalid('edgespec.mode "distributed": this endpoint drafts nothing (it was '
                          'started with --mode centralized, no draft loaded): ask "centralized"',
                          param="edgespec.mode", code="unsupported_value")  # fmt: skip
        return
    if link_from_config(config) is not None:
        raise invalid('edgespec.mode "centralized": this endpoint emulates a link (--link-*) '
                      "that only drafted rounds cross; ask \"distributed\"",
                      param="edgespec.mode", code="unsupported_value")  # fmt: skip


def check_slo_class(classes: frozenset[str] | None, request: ParsedRequest) -> None:
    """An SLO class the servers lack (when their Health says theirs), refused before the
    request waits for a worker (the server refused it only once a session was asked for)."""
    if classes is not None and request.slo_class not in classes:
        raise invalid(f"edgespec.slo_class {shown(request.slo_class)} is not an SLO "
                      f"class of the server, which has {shown(sorted(classes), 200)}",
                      param="edgespec.slo_class")  # fmt: skip


def check_context(context: int | None, request: ParsedRequest, num_prompt_tokens: int) -> None:
    """A prompt of ``num_prompt_tokens`` (at least 1) and ``max_tokens`` beyond the target's
    context, refused before a worker or a server session is taken (an unknown context is
    left to the server, whose refusal :func:`~.generation.run_request` words the same).
    ``max_tokens`` 0 (the prompt scored alone) still takes a token of the context: the
    server's session commits one, not shown."""
    if not context:
        return
    if request.max_tokens == 0 and num_prompt_tokens >= context:  # the server's one token
        raise invalid(f"the prompt is {num_prompt_tokens} tokens: scoring it (max_tokens 0) "
                      f"takes one token more than the prompt, over the target's context of "
                      f"{context}; shorten the prompt", param=prompt_param(request.prompt),
                      code="context_length_exceeded")  # fmt: skip
    if num_prompt_tokens + request.max_tokens > context:
        raise context_exceeded(num_prompt_tokens, request.max_tokens, context,
                               prompt_param(request.prompt), request.max_tokens_field)  # fmt: skip


def check_logprob_volume(prompts: Sequence[tuple[ParsedRequest, int]]) -> None:
    """A response that would hold more than :data:`MAX_LOGPROB_ENTRIES` log-probabilities,
    refused before it runs: ``prompts``, a request's (a batch's, each prompt's) with its
    prompt's tokens, counted when echoed."""
    if prompts[0][0].logprobs is None:
        return
    terms = [(r.n, n_ids if r.echo else 0, r.max_tokens, 1 + (r.logprobs or 0))
             for r, n_ids in prompts]  # fmt: skip
    entries = sum(n * (echoed + tokens) * width for n, echoed, tokens, width in terms)
    if entries <= MAX_LOGPROB_ENTRIES:
        return
    formula = "n × (echoed prompt tokens + max_tokens) × (1 + logprobs)"
    if len(terms) == 1:
        said = "{} × ({} + {}) × {}".format(*terms[0])
        told = f"{formula} is {said} = {entries:,} log-probabilities"
    else:
        told = f"{len(terms)} prompts' {formula} sum to {entries:,} log-probabilities"
    raise invalid(f"{told}, over the {MAX_LOGPROB_ENTRIES:,} one response may hold; ask "
                  "fewer choices, tokens or alternatives", param="logprobs")  # fmt: skip
