"""vLLM's tokenizer routes, with the endpoint's tokenizer (the target's vocabulary):
``GET /tokenizer_info`` (its special tokens, chat template and the target's context),
``POST /tokenize`` (``prompt`` text, ``add_special_tokens`` as vLLM's, default true; or
chat ``messages`` rendered as a chat request's are, with its rendering fields:
:mod:`.chat_fields`) and ``POST /detokenize``
(``tokens``); ``return_token_strs`` gives each id's token as the vocabulary spells it.
lm-evaluation-harness's ``local-completions`` finds them and tokenizes
through the endpoint, so a client needs no copy of the tokenizer. Bodies are bounded as
a completion's (``Limits``): text and messages as a prompt before tokenizing, waiting in
the same line for the tokenizer (:mod:`.tokenizing`); ``tokens`` at most a prompt and a
completion's worth, each in the vocabulary. A field set to ``null`` is absent, as in a
completion's body; another field is a 400 naming it; a ``model`` other than the served one
a 404. The tokenizer runs off the event loop, spelling ``return_token_strs`` too, and a
client that leaves while its prompt waits for the tokenizer gives its place up."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from edgespec.runtime.openai_api.admission import ClientHold
from edgespec.runtime.openai_api.chat_fields import chat_rendering
from edgespec.runtime.openai_api.chat_prompt import DEFAULT_RENDERING, ChatRendering
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.errors import clip, invalid, shown, unknown_model
from edgespec.runtime.openai_api.fields import boolean_field
from edgespec.runtime.openai_api.messages import Prompt, parse_prompt, prompt_size
from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK, check_vocabulary, prompt_ids
from edgespec.runtime.openai_api.schema import Limits
from edgespec.runtime.openai_api.tokenizing import PromptLine, run_holding
from edgespec.runtime.openai_api.waits import waited

TOKENIZE_FIELDS = frozenset(
    {"model", "prompt", "messages", "add_special_tokens", "add_generation_prompt",
     "continue_final_message", "chat_template_kwargs", "return_token_strs"}
)  # fmt: skip
DETOKENIZE_FIELDS = frozenset({"model", "tokens"})


def tokenizer_info(setup: EdgeSetup) -> dict[str, Any]:
    """``/tokenizer_info``: the tokenizer's class, special tokens and chat template (the
    family's when the tokenizer has none), the target's context (``null`` unknown)."""
    tokenizer = setup.tokenizer
    info: dict[str, Any] = {"tokenizer_class": type(tokenizer).__name__}
    for name in ("bos_token", "eos_token", "pad_token", "unk_token"):
        token = getattr(tokenizer, name, None)
        info[name] = token if isinstance(token, str) else None
    info["chat_template"] = getattr(tokenizer, "chat_template", None)
    info["model_max_length"] = setup.max_context_tokens
    return info


def checked_body(body: Mapping[str, Any], fields: frozenset[str], model_id: str) -> dict[str, Any]:
    """``body`` without its ``null`` fields (absent, as a completion's), refused when it
    names a field outside ``fields`` or a model other than ``model_id``."""
    body = {name: value for name, value in body.items() if value is not None}
    if unknown := sorted(set(body) - fields):
        raise invalid(f"unknown field {shown(unknown[0])}: this route takes "
                      f"{', '.join(sorted(fields))}", param=clip(unknown[0]),
                      code="unknown_parameter")  # fmt: skip
    model = body.get("model", model_id)
    if model != model_id:
        raise unknown_model(model if isinstance(model, str) else shown(model), model_id)
    return body


def is_chat(body: Mapping[str, Any]) -> bool:
    """Whether ``/tokenize``'s ``body`` gives chat ``messages`` (else ``prompt`` text)."""
    chat = "messages" in body
    if chat == ("prompt" in body):
        raise invalid("give prompt (text) or messages (chat), one of them", param="prompt")
    return chat


def tokenize_prompt(body: Mapping[str, Any], limits: Limits) -> Prompt:
    """``/tokenize``'s ``prompt`` text or chat ``messages``, bounded as a request's."""
    chat = is_chat(body)
    prompt = parse_prompt(body, chat, limits.max_prompt_tokens, limits.chars_per_token)
    if not chat and not isinstance(prompt, str):
        raise invalid(f"prompt must be a string here, got {shown(body['prompt'])}",
                      param="prompt")  # fmt: skip
    return prompt


def tokenize_ids(
    setup: EdgeSetup,
    prompt: Prompt,
    add_special_tokens: bool,
    limits: Limits,
    rendering: ChatRendering = DEFAULT_RENDERING,
) -> list[int]:
    """``prompt``'s ids (call it holding the tokenizer's turn): text as the tokenizer
    splits it, chat messages as a chat request's are rendered (as ``rendering`` says)."""
    if not isinstance(prompt, str):
        return list(prompt_ids(setup.tokenizer, setup.special_ids, prompt, setup.vocab_size,
                               limits, rendering))  # fmt: skip
    with TOKENIZER_LOCK:
        return list(setup.tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"])


def _chat_rendering(body: Mapping[str, Any]) -> ChatRendering:
    """``add_generation_prompt``, ``continue_final_message`` and ``chat_template_kwargs``
    (vLLM's): of chat ``messages`` only."""
    if not is_chat(body):
        for name in ("add_generation_prompt", "continue_final_message", "chat_template_kwargs"):
            if name in body:
                raise invalid(f"{name} applies to chat messages, not to a text prompt",
                              param=name)  # fmt: skip
    return chat_rendering(body)


def token_strs(setup: EdgeSetup, ids: list[int]) -> list[str]:
    """Each of ``ids``' token as the vocabulary spells it (``convert_ids_to_tokens``; call
    it off the event loop: it waits for the tokenizer's lock)."""
    with TOKENIZER_LOCK:
        return [str(t) for t in setup.tokenizer.convert_ids_to_tokens(ids)]


def tokenized(
    setup: EdgeSetup, prompt: Prompt, add_special_tokens: bool, limits: Limits,
    rendering: ChatRendering, spelt: bool,
) -> tuple[list[int], list[str] | None]:  # fmt: skip
    """``/tokenize``'s ids (:func:`tokenize_ids`) and, when ``spelt``, their spellings."""
    ids = tokenize_ids(setup, prompt, add_special_tokens, limits, rendering)
    return ids, token_strs(setup, ids) if spelt else None


def detokenized(setup: EdgeSetup, body: Mapping[str, Any], limits: Limits) -> str:
    """``/detokenize``'s text of a checked ``body``'s ``tokens``."""
    tokens = body.get("tokens")
    most = limits.max_prompt_tokens + limits.max_tokens
    if isinstance(tokens, list) and len(tokens) > most:
        raise invalid(f"tokens holds {len(tokens)} ids, over the limit of {most} (a prompt "
                      "and a completion)", param="tokens")  # fmt: skip
    if not isinstance(tokens, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in tokens
    ):
        raise invalid(f"tokens must be a list of token ids, got {shown(tokens)}",
                      param="tokens")  # fmt: skip
    check_vocabulary(tokens, setup.vocab_size, "tokens", "tokens")
    with TOKENIZER_LOCK:
        return str(setup.tokenizer.decode(tokens))


def add_tokenizer_routes(
    app: FastAPI,
    setup: EdgeSetup,
    model_id: str,
    limits: Limits,
    line: PromptLine,
    read_json: Callable[[Request, Limits], Awaitable[dict[str, Any]]],
    error_response: Callable[[BaseException], Response],
    hold: Callable[[Request], ClientHold],
) -> None:
    """The three routes on ``app``: a body read by ``read_json`` (the completions'
    reader), a refusal answered by ``error_response``, a request counted against its
    client's cap by ``hold`` while it is answered (the completions' count)."""

    async def _body(request: Request, fields: frozenset[str]) -> dict[str, Any]:
        return checked_body(await read_json(request, limits), fields, model_id)

    @app.api_route("/tokenizer_info", methods=["GET", "HEAD"])  # as every GET route
    async def info() -> JSONResponse:
        return JSONResponse(tokenizer_info(setup))

    @app.post("/tokenize")
    async def tokenize(request: Request) -> Response:
        try:
            with hold(request):
                body = await _body(request, TOKENIZE_FIELDS)
                prompt = tokenize_prompt(body, limits)
                special = boolean_field(body, "add_special_tokens", True)
                rendering = _chat_rendering(body)
                spelt = boolean_field(body, "return_token_strs", False)
                await waited(request, line.acquire(prompt_size(prompt)), line.release)
                ids, strs = await run_holding(
                    line, partial(tokenized, setup, prompt, special, limits, rendering, spelt)
                )
        except Exception as exc:
            return error_response(exc)
        return JSONResponse({"count": len(ids), "max_model_len": setup.max_context_tokens,
                             "tokens": ids, "token_strs": strs})  # fmt: skip

    @app.post("/detokenize")
    async def detokenize(request: Request) -> Response:
        try:
            with hold(request):
                body = await _body(request, DETOKENIZE_FIELDS)
                text = await asyncio.to_thread(detokenized, setup, body, limits)
        except Exception as exc:
            return error_response(exc)
        return JSONResponse({"prompt": text})
