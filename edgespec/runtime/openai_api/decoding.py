"""A request's decoding in its ``edgespec.mode``, committed tokens handed to ``on_tokens``
as they arrive: ``distributed``, rounds drafted here and verified on the chosen server (its
sessions closed there however the request ends); ``centralized``, the server decoding
alone, its ``Generate`` stream read chunk by chunk (the first asked again while the server
is unreachable, within the request's retry budget; a client that leaves, or a stop
sequence, ends the stream at its next chunk and cancels it on the server). Both pick the
server alike: the only one, or routing's choice among several."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import SamplingParams
from edgespec.runtime.edge.session_ids import new_session_id
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.schema import ParsedRequest
from edgespec.runtime.openai_api.session_tracker import tracked

OnLogprobs = Callable[[tuple[TokenLogprobs, ...]], None]


def decode(
    setup: EdgeSetup,
    request: ParsedRequest,
    prompt_ids: tuple[int, ...],
    sampling: SamplingParams,
    window: Any,
    cancel: threading.Event,
    on_tokens: Callable[[tuple[int, ...]], None],
    on_logprobs: OnLogprobs | None,
    on_prompt_logprobs: OnLogprobs | None,
) -> None:
    """Decode ``prompt_ids`` in ``request.mode`` (``window``: a distributed request's
    policy); raises what the drafter loop or the stream raises (``on_tokens``'
    :class:`~edgespec.runtime.edge.reconnect.Cancelled`, a
    :class:`~edgespec.runtime.errors.RequestError`)."""
    verifier, options = _verifier_and_options(setup, request, cancel, on_logprobs,
                                              on_prompt_logprobs)  # fmt: skip
    if request.mode == "centralized":
        _centralized(setup, verifier, options, prompt_ids, sampling, on_tokens)
        return
    from edgespec.runtime.edge.drafter import generate
    from edgespec.runtime.wire.emulated_link import wrap_verifier

    tracker = tracked(wrap_verifier(verifier, setup.config))  # closed however it ends
    try:
        generate(tracker, request_drafter(setup), prompt_ids, sampling, options, window, on_tokens,
                 setup.clock)  # fmt: skip
    finally:
        tracker.close_all()


def _centralized(
    setup: EdgeSetup,
    verifier: Any,
    options: Any,
    prompt_ids: tuple[int, ...],
    sampling: SamplingParams,
    on_tokens: Callable[[tuple[int, ...]], None],
) -> None:
    """The server's own decoding of the request, chunk by chunk (with ``echo`` and
    ``logprobs``, the prompt's log-probabilities with the first), a stream the server lost
    gone on from what it committed (:func:`~edgespec.runtime.edge.server_side.resumed_chunks`,
    within the request's retry and progress budgets); closing the stream (the request
    ended, ``on_tokens`` raised) cancels it on the server."""
    from edgespec.runtime.edge.server_side import resumed_chunks
    from edgespec.runtime.messages import SessionSpec

    spec = SessionSpec(options.session_id, options.client_id, prompt_ids, sampling,
                       options.slo_class)  # fmt: skip
    retry_s = (options.first_open_retry_s, options.retry_timeout_s)
    chunks = resumed_chunks(verifier, spec, False, 1, options.on_logprobs, setup.clock,
                            retry_s, options.progress, options.cancel,
                            on_prompt_logprobs=options.on_prompt_logprobs)  # fmt: skip
    try:
        for chunk in chunks:
            on_tokens(chunk)
    finally:
        chunks.close()


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


def request_drafter(setup: EdgeSetup) -> Any:
    """A draft backend of the request's own (its KV cache is per request)."""
    from edgespec.runtime.edge.draft_backends import make_drafter

    config = setup.config
    return make_drafter(config.draft, setup.draft_model, setup.vocab_size, config.lookup,
                        config.tree, config.tree_min_prob, setup.max_nodes)  # fmt: skip


def _verifier_and_options(
    setup: EdgeSetup,
    request: ParsedRequest,
    cancel: threading.Event,
    on_logprobs: OnLogprobs | None,
    on_prompt_logprobs: OnLogprobs | None,
) -> tuple[Any, Any]:
    """The verifier a request's session opens on (:func:`_verifier`) and its
    :class:`~edgespec.runtime.edge.drafter.DraftOptions`: a new endpoint session id, the
    reconnect budget, the retry time the server's choice left, the receivers of the output's
    and the prompt's log-probabilities."""
    from edgespec.runtime.edge.drafter import DraftOptions
    from edgespec.runtime.edge.progress import ProgressBudget

    config = setup.config
    session_id = new_session_id(config.client_id, endpoint=True)
    budget = ProgressBudget(config.max_reconnects, config.progress_timeout_s)
    options = DraftOptions(session_id, config.client_id, request.slo_class,
                           config.retry_timeout_s, progress=budget, cancel=cancel,
                           on_logprobs=on_logprobs,
                           on_prompt_logprobs=on_prompt_logprobs)  # fmt: skip
    verifier, left_s = _verifier(setup, options)
    return verifier, dataclasses.replace(options, first_open_retry_s=left_s)
