"""One request's distributed speculative decoding, run in a worker thread: token ids in,
text deltas out as rounds commit them (stop sequences cut the text and end the session),
with the log-probabilities of the tokens they show when asked; a client that went away
(:class:`threading.Event` set) ends it at the next round, or within one retry backoff
while the server is unreachable, and the session is closed however the request ends. A
server unreachable (restarting) when the request opens its session, or later, is retried
for up to the config's ``retry_timeout_s``, then the request is a 503; with several
servers, so is routing while none of them answers, and routing and the first open share
that one budget: a new request waits at most ``retry_timeout_s`` for a server.

``usage.completion_tokens`` counts the tokens of the text returned (a stop sequence, a chat
template's end-of-turn token and what a round committed after them are not counted; an
end-of-sequence token the model ended on is). ``finish_reason`` is ``"length"`` only when
the output reached ``max_tokens`` without ending (a last token that is an end of sequence,
:func:`end_ids`, is a ``"stop"``, unless the request ignores EOS)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.models.chat_templates import end_of_turn_ids
from edgespec.runtime.edge.reconnect import Cancelled
from edgespec.runtime.errors import RequestError
from edgespec.runtime.openai_api.decoding import decode
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.errors import (
    clip,
    from_request_error,
    invalid,
)
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs, LogprobTally
from edgespec.runtime.openai_api.prompt_echo import PromptEcho
from edgespec.runtime.openai_api.prompts import check_vocabulary, prompt_ids, prompt_param
from edgespec.runtime.openai_api.request_checks import (
    check_context,
    check_logprob_volume,
    check_mode,
    check_slo_class,
)
from edgespec.runtime.openai_api.schema import Limits, ParsedRequest
from edgespec.runtime.openai_api.text import TextStream


@dataclass(frozen=True, slots=True)
class Completion:
    """What a request produced: its text (cut at a stop sequence) and token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int  # the tokens of ``text`` (and an EOS the model ended on)
    finish_reason: str  # "stop" (EOS or a stop sequence) or "length" (max_tokens)
    logprobs: ChoiceLogprobs | None = None  # those tokens', when the request asks
    first_token_at_s: float | None = None  # the setup's clock at its first token (None: none)


def _window(setup: EdgeSetup, request: ParsedRequest) -> Any:
    """A fresh window policy for the request: its ``edgespec.window``, else the config's
    (checked at startup); one whose rounds may draft more than the servers verify
    (:func:`~edgespec.runtime.edge.block_limit.block_over_limit`) is refused."""
    from edgespec.policies.registry import PolicyConfigError, build_policy
    from edgespec.runtime.edge.block_limit import (
        NO_FUSED_ROUNDS,
        block_over_limit,
        fuses_on_a_server_without,
        limit_told,
    )

    spec = request.window
    name, params = (spec.name, spec.params) if spec else (setup.config.window.name,
                                                          setup.config.window.params)  # fmt: skip
    try:
        window = build_policy("window", name, params)
    except PolicyConfigError as exc:
        raise invalid(f"edgespec.window: {clip(str(exc), 200)}", param="edgespec.window") from None
    limit = setup.max_draft_tokens
    over = block_over_limit(window, setup.config.tree is not None, limit)
    if spec is not None and over is not None and limit is not None:
        fixed = "" if over.settable else "its fixed "
        raise invalid(f"edgespec.window {name}: {fixed}{over.param} {over.gamma} "
                      f"{limit_told(limit)}", param="edgespec.window")  # fmt: skip
    if (
        spec is not None
        and setup.drafts
        and fuses_on_a_server_without(window, setup.runs_fused_rounds)
    ):
        raise invalid(f"edgespec.window {name}: its rounds may go fused, and {NO_FUSED_ROUNDS}",
                      param="edgespec.window")  # fmt: skip
    return window


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """A request ready to generate: its prompt's token ids, its sampling and a window
    policy of its own, made before it waits for a worker (a bad one is a 400 at once);
    ``more_windows``: choices 1.. of ``n``'s own."""

    request: ParsedRequest
    prompt_ids: tuple[int, ...]
    sampling: SamplingParams
    window: Any
    more_windows: tuple[Any, ...] = ()


def end_ids(setup: EdgeSetup) -> frozenset[int]:
    """The tokens the endpoint takes for an end of sequence: the tokenizer's EOS, a chat
    template's end of turn, and the draft model's EOS ids (the target's family's)."""
    ids = set(end_of_turn_ids(setup.tokenizer))
    eos = getattr(setup.tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    if getattr(setup.draft_model, "generation_config", None) is not None:
        from edgespec.runtime.backends.transformers_backend import eos_ids

        ids |= eos_ids(setup.draft_model)
    return frozenset(ids)


def prepare(setup: EdgeSetup, request: ParsedRequest, limits: Limits) -> PreparedRequest:
    """Tokenize ``request``'s prompt (bounded by ``limits``), check it and ``max_tokens``
    against the target's context, and make its window policy (a distributed request's:
    ``n`` of them)."""
    check_mode(setup.config, setup.drafts, request)
    vocab = setup.vocab_size  # a stop id no round could commit, a bias on no token: 400s
    check_vocabulary(sorted(request.stop_token_ids), vocab, "stop_token_ids", "stop_token_ids")
    check_vocabulary([t for t, _ in request.sampling.logit_bias], vocab, "logit_bias", "logit_bias")
    check_slo_class(setup.slo_classes, request)
    context = setup.max_context_tokens
    check_context(context, request, 1)  # max_tokens alone: before the prompt is tokenized
    check_logprob_volume([(request, 1)])
    ids = prompt_ids(setup.tokenizer, setup.special_ids, request.prompt, setup.vocab_size,
                     limits, request.chat_rendering)  # fmt: skip
    check_context(context, request, len(ids))
    check_logprob_volume([(request, len(ids))])
    # the server ends at the chat template's end of turn too, a completion's as a chat's
    ends = frozenset() if request.ignore_eos else end_of_turn_ids(setup.tokenizer)
    stop_ids = request.stop_token_ids | ends
    num_new = max(request.max_tokens, 1)  # max_tokens 0: one, not shown (the prompt alone)
    sampling = request.sampling.params(num_new, request.seed, request.ignore_eos,
                                       stop_ids, request.min_tokens, request.logprobs,
                                       request.echo)  # fmt: skip
    windows = tuple(_window(setup, request) if request.mode == "distributed" else None
                    for _ in range(request.n))  # fmt: skip
    return PreparedRequest(request, ids, sampling, windows[0], windows[1:])


def run_request(
    setup: EdgeSetup,
    prepared: PreparedRequest,
    on_text: Callable[[str, ChoiceLogprobs | None], None],
    cancel: threading.Event,
) -> Completion:
    """Generate ``prepared``; text deltas go to ``on_text`` as rounds commit, with the
    log-probabilities of the tokens they show when the request asks. Raises
    :class:`Cancelled` when ``cancel`` is set (the session closed); the server's refusal
    (or its absence) as an :class:`~.errors.ApiError` in the request's terms."""
    request = prepared.request
    stop_ids = frozenset(prepared.sampling.stop_token_ids)  # with a chat's end of turn
    text = TextStream(setup.tokenizer, request.stop, stop_ids, request.min_tokens)
    committed: list[int] = []
    first_at: list[float] = []  # when the first tokens came
    echo = PromptEcho(setup.tokenizer, request, prepared.prompt_ids, on_text)
    tally = None if request.logprobs is None else LogprobTally(
        setup.tokenizer, committed, echo.offsets(text.token_offsets))  # fmt: skip

    def on_tokens(tokens: tuple[int, ...]) -> None:
        echo.before_tokens()
        if not request.max_tokens:  # the prompt alone: no output shown
            raise Cancelled
        if not committed:
            first_at.append(setup.clock())
        committed.extend(tokens)
        delta = text.push(tokens)
        if delta:
            on_text(delta, None if tally is None else tally.upto(text.shown_tokens()))
        if cancel.is_set() or text.stopped:
            raise Cancelled

    try:
        decode(setup, request, prepared.prompt_ids, prepared.sampling, prepared.window, cancel,
               on_tokens, None if tally is None else tally.values.extend,
               echo.take if echo.waits else None)  # fmt: skip
    except Cancelled:
        if not text.stopped and request.max_tokens:
            raise
    except RequestError as exc:  # the app logs a 502 (the endpoint's token refused), a 503
        raise from_request_error(exc, prompt_param(request.prompt),
                                 request.max_tokens_field) from None  # fmt: skip
    rest = "" if text.stopped else text.finish()
    held = None if tally is None else tally.upto(text.num_tokens)  # an EOS shows no text
    if rest or held:
        on_text(rest, held)
    n = text.num_tokens
    return Completion(echo.text + text.text, len(prepared.prompt_ids), n,
                      _finish(setup, text, committed, request),
                      echo.joined(None if tally is None else tally.whole(n)),
                      first_at[0] if first_at else None)  # fmt: skip


def _finish(
    setup: EdgeSetup, text: TextStream, committed: list[int], request: ParsedRequest
) -> str:
    """``"length"`` when the output reached ``max_tokens`` without ending (with
    ``ignore_eos``, without a stop sequence or stop token), else ``"stop"``."""
    if text.stopped or len(committed) < request.max_tokens:
        return "stop"
    ended = bool(committed) and committed[-1] in end_ids(setup)  # none: max_tokens 0
    return "stop" if ended and not request.ignore_eos else "length"
