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

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.models.chat_templates import end_of_turn_ids
from edgespec.runtime.edge.reconnect import Cancelled
from edgespec.runtime.edge.session_ids import new_session_id
from edgespec.runtime.errors import RequestError
from edgespec.runtime.openai_api.chat_prompt import special_ids
from edgespec.runtime.openai_api.errors import (
    clip,
    from_request_error,
    invalid,
)
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs, LogprobTally
from edgespec.runtime.openai_api.messages import is_chat
from edgespec.runtime.openai_api.prompt_echo import PromptEcho
from edgespec.runtime.openai_api.prompts import check_vocabulary, prompt_ids, prompt_param
from edgespec.runtime.openai_api.request_checks import (
    check_context,
    check_sampling,
    check_slo_class,
)
from edgespec.runtime.openai_api.schema import Limits, ParsedRequest
from edgespec.runtime.openai_api.session_tracker import tracked
from edgespec.runtime.openai_api.text import TextStream
from edgespec.runtime.openai_api.throttle import RefusedCredentials


@dataclass(frozen=True, slots=True)
class Completion:
    """What a request produced: its text (cut at a stop sequence) and token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int  # the tokens of ``text`` (and an EOS the model ended on)
    finish_reason: str  # "stop" (EOS or a stop sequence) or "length" (max_tokens)
    logprobs: ChoiceLogprobs | None = None  # those tokens', when the request asks


@dataclass(frozen=True, slots=True)
class EdgeSetup:
    """What every request shares: the drafter config, the draft model (``None`` for prompt
    lookup), the tokenizer, the target's vocabulary size, the tree size cap, the
    verification servers' clients and, with several, the routing policy across them, what
    the servers' Health reports (``None``: it does not say): the target's context, the
    longest draft block, the SLO classes, the target's name; the clock the requests'
    retries and records are timed on; the log of the servers' refusals of the endpoint's
    own credentials (its 502s, told by the app as it answers them); the servers that
    answered as the endpoint started (reachable from its first ``/ready`` on); the servers
    known to be down now, which routing does not ask (the app's watch,
    :meth:`.health.Health.known_down`; ``None``: routing asks every one). The tokenizer's
    special tokens (:func:`.chat_prompt.special_ids`) are read once, as it is built."""

    config: Any  # DrafterConfig
    draft_model: Any
    tokenizer: Any
    vocab_size: int
    max_nodes: int
    verifiers: tuple[Any, ...]
    routing: Any = None
    max_context_tokens: int | None = None
    max_draft_tokens: int | None = None
    slo_classes: frozenset[str] | None = None
    target_name: str | None = None
    clock: Callable[[], float] = time.perf_counter
    refusals: RefusedCredentials = dataclasses.field(default_factory=RefusedCredentials)
    answered_at_start: frozenset[str] = frozenset()
    known_down: Callable[[], frozenset[int]] | None = None
    special_ids: frozenset[int] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # derived once (the class is frozen)
        object.__setattr__(self, "special_ids", special_ids(self.tokenizer))


def _verifier(setup: EdgeSetup, options: Any) -> tuple[Any, float]:
    """The server for a new request (``options``: its ``DraftOptions``, with its retry
    timeout, backoff and cancel event) and how long its first open may retry while the
    server is unreachable: the only server, for the whole ``retry_timeout_s``; or the
    routing policy's pick (those known down not asked), asked again while no server
    answers, for what routing left of it
    (:func:`~edgespec.runtime.edge.routing.route_retrying`)."""
    if len(setup.verifiers) == 1:
        return setup.verifiers[0], options.retry_timeout_s
    import numpy as np

    from edgespec.runtime.edge.routing import route_retrying

    choice, left_s = route_retrying(setup.verifiers, setup.routing, np.random.default_rng(),
                                    setup.clock, options.retry_timeout_s,
                                    options.retry_backoff_s, options.cancel,
                                    setup.known_down)  # fmt: skip
    return setup.verifiers[choice.server_index], left_s


def _window(setup: EdgeSetup, request: ParsedRequest) -> Any:
    """A fresh window policy for the request: its ``edgespec.window``, else the config's
    (checked at startup); one whose rounds may draft more than the servers verify
    (:func:`~edgespec.runtime.edge.block_limit.block_over_limit`) is refused."""
    from edgespec.policies.registry import PolicyConfigError, build_policy
    from edgespec.runtime.edge.block_limit import block_over_limit, limit_told

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
    return window


def _drafter(setup: EdgeSetup) -> Any:
    """A draft backend of the request's own (its KV cache is per request)."""
    from edgespec.runtime.edge.draft_backends import make_drafter

    config = setup.config
    return make_drafter(config.draft, setup.draft_model, setup.vocab_size, config.lookup,
                        config.tree, config.tree_min_prob, setup.max_nodes)  # fmt: skip


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
    against the target's context, and make its window policy."""
    check_sampling(setup.config, request)
    vocab = setup.vocab_size  # a stop id no round could commit, a bias on no token: 400s
    check_vocabulary(sorted(request.stop_token_ids), vocab, "stop_token_ids", "stop_token_ids")
    check_vocabulary([t for t, _ in request.sampling.logit_bias], vocab, "logit_bias", "logit_bias")
    check_slo_class(setup.slo_classes, request)
    context = setup.max_context_tokens
    check_context(context, request, 1)  # max_tokens alone: before the prompt is tokenized
    ids = prompt_ids(setup.tokenizer, setup.special_ids, request.prompt, setup.vocab_size,
                     limits, request.chat_rendering)  # fmt: skip
    check_context(context, request, len(ids))
    chat = is_chat(request.prompt)  # the server ends at a chat's end of turn too
    ends = end_of_turn_ids(setup.tokenizer) if chat and not request.ignore_eos else frozenset()
    stop_ids = request.stop_token_ids | ends
    num_new = max(request.max_tokens, 1)  # max_tokens 0: one, not shown (the prompt alone)
    sampling = request.sampling.params(num_new, request.seed, request.ignore_eos,
                                       stop_ids, request.min_tokens, request.logprobs,
                                       request.echo)  # fmt: skip
    more = tuple(_window(setup, request) for _ in range(request.n - 1))
    return PreparedRequest(request, ids, sampling, _window(setup, request), more)


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
    from edgespec.runtime.edge.drafter import generate
    from edgespec.runtime.wire.emulated_link import wrap_verifier

    config, request = setup.config, prepared.request
    stop_ids = frozenset(prepared.sampling.stop_token_ids)  # with a chat's end of turn
    text = TextStream(setup.tokenizer, request.stop, stop_ids, request.min_tokens)
    committed: list[int] = []
    echo = PromptEcho(setup.tokenizer, request, prepared.prompt_ids, on_text)
    tally = None if request.logprobs is None else LogprobTally(
        setup.tokenizer, committed, echo.offsets(text.token_offsets))  # fmt: skip

    def on_tokens(tokens: tuple[int, ...]) -> None:
        echo.before_tokens()
        if not request.max_tokens:  # the prompt alone: no output shown
            raise Cancelled
        committed.extend(tokens)
        delta = text.push(tokens)
        if delta:
            on_text(delta, None if tally is None else tally.upto(text.shown_tokens()))
        if cancel.is_set() or text.stopped:
            raise Cancelled

    verifier, options = _verifier_and_options(setup, request, cancel, tally, echo)
    tracker = tracked(wrap_verifier(verifier, config))  # its sessions closed however it ends
    try:
        generate(tracker, _drafter(setup), prepared.prompt_ids, prepared.sampling, options,
                 prepared.window, on_tokens, setup.clock)  # fmt: skip
    except Cancelled:
        if not text.stopped and request.max_tokens:
            raise
    except RequestError as exc:  # the app logs a 502 (the endpoint's token refused), a 503
        raise from_request_error(exc, prompt_param(request.prompt),
                                 request.max_tokens_field) from None  # fmt: skip
    finally:
        tracker.close_all()
    rest = "" if text.stopped else text.finish()
    held = None if tally is None else tally.upto(text.num_tokens)  # an EOS shows no text
    if rest or held:
        on_text(rest, held)
    n = text.num_tokens
    return Completion(echo.text + text.text, len(prepared.prompt_ids), n,
                      _finish(setup, text, committed, request),
                      echo.joined(None if tally is None else tally.whole(n)))  # fmt: skip


def _verifier_and_options(
    setup: EdgeSetup,
    request: ParsedRequest,
    cancel: threading.Event,
    tally: LogprobTally | None,
    echo: PromptEcho,
) -> tuple[Any, Any]:
    """The verifier a request's session opens on (:func:`_verifier`) and its
    :class:`~edgespec.runtime.edge.drafter.DraftOptions`: a new endpoint session id, the
    reconnect budget, the retry time the server's choice left, the log-probabilities'
    and the echo's receivers."""
    from edgespec.runtime.edge.drafter import DraftOptions
    from edgespec.runtime.edge.progress import ProgressBudget

    config = setup.config
    session_id = new_session_id(config.client_id, endpoint=True)
    budget = ProgressBudget(config.max_reconnects, config.progress_timeout_s)
    options = DraftOptions(session_id, config.client_id, request.slo_class,
                           config.retry_timeout_s, progress=budget, cancel=cancel,
                           on_logprobs=None if tally is None else tally.values.extend,
                           on_prompt_logprobs=echo.take if echo.waits else None)  # fmt: skip
    verifier, left_s = _verifier(setup, options)
    return verifier, dataclasses.replace(options, first_open_retry_s=left_s)


def _finish(
    setup: EdgeSetup, text: TextStream, committed: list[int], request: ParsedRequest
) -> str:
    """``"length"`` when the output reached ``max_tokens`` without ending (with
    ``ignore_eos``, without a stop sequence or stop token), else ``"stop"``."""
    if text.stopped or len(committed) < request.max_tokens:
        return "stop"
    ended = bool(committed) and committed[-1] in end_ids(setup)  # none: max_tokens 0
    return "stop" if ended and not request.ignore_eos else "length"
