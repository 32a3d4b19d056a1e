"""Which fields a request may carry: those the endpoint applies; those it does not apply,
taken only at a value that changes nothing (:data:`UNSUPPORTED`); a few that never change
the output, accepted and ignored (:data:`IGNORED`). Any other field is refused with a 400
naming it, never ignored: a client that asks for ``best_of`` or ``tools`` is told it does
not get it. A field given as ``null`` counts as absent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edgespec.runtime.openai_api.errors import clip, invalid, shown

APPLIED = ("model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop",
           "stop_token_ids", "ignore_eos", "logit_bias", "presence_penalty",
           "frequency_penalty", "repetition_penalty", "min_tokens", "n", "logprobs",
           "stream", "stream_options", "edgespec")  # fmt: skip
"""Fields of both routes that the endpoint applies."""

OWN = {False: ("prompt", "echo"),
       True: ("messages", "max_completion_tokens", "top_logprobs", "add_generation_prompt",
              "continue_final_message", "chat_template_kwargs")}  # fmt: skip
"""Fields of ``/v1/completions`` (``False``) or ``/v1/chat/completions`` (``True``) only."""

ROUTES = {False: "/v1/completions", True: "/v1/chat/completions"}

UNSUPPORTED: dict[str, tuple[Any, ...]] = {
    "best_of": (1,),
    "suffix": (),
    "response_format": ({"type": "text"},),
    "tools": ([],),
    "tool_choice": ("none",),
    "functions": ([],),
    "function_call": ("none",),
    "parallel_tool_calls": (),
    "reasoning_effort": (),
    "modalities": (["text"],),
    "prediction": (),
    "service_tier": ("auto", "default"),
}
"""Fields accepted only absent, null or at these values, of their JSON type (anything else
is refused, not ignored: a best-of search, tools or a response format this endpoint would
not apply); a route's own values in :data:`ROUTE_UNSUPPORTED`."""

ROUTE_UNSUPPORTED: dict[bool, dict[str, tuple[Any, ...]]] = {
    False: {},
    True: {"echo": (False,)},
}
"""What a route takes instead of :data:`UNSUPPORTED`'s: ``echo`` is applied on
``/v1/completions`` (the prompt before the completion), and in chat (vLLM's, echoing the
last message) only ``false``."""

UNKNOWN = "unknown_parameter"
"""The code of a refused field the route does not know (OpenAI's)."""

IGNORED = ("metadata", "store", "user")
"""Fields accepted whatever their value and ignored: they label or keep a request and never
change its output (this endpoint stores nothing)."""


def boolean_field(body: Mapping[str, Any], name: str, default: bool) -> bool:
    """Field ``name``, a boolean (absent or null: ``default``), else a 400 naming it."""
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise invalid(f"{name} must be a boolean, got {shown(value)}", param=name)
    return default if value is None else value


def allowed_values(allowed: tuple[Any, ...]) -> str:
    """``null`` and ``allowed`` spelled as JSON, the last after "or" (``null, -1 or 0``);
    a number taken as an integer and as a float is one JSON number, named once (``0``)."""
    spelled: list[str] = []
    for value in (None, *allowed):
        whole = isinstance(value, float) and value.is_integer()
        text = shown(int(value) if whole else value)
        if text not in spelled:
            spelled.append(text)
    return ", ".join(spelled[:-1]) + " or " + spelled[-1] if len(spelled) > 1 else spelled[0]


def _unsupported(body: Mapping[str, Any], chat: bool) -> None:
    """A 400 naming the first field of :data:`UNSUPPORTED` at a value the route does not
    take, values spelled as JSON; its code OpenAI's: ``unsupported_value`` (the field takes
    some value), ``unsupported_parameter`` (it takes none but null)."""
    for name, allowed in (UNSUPPORTED | ROUTE_UNSUPPORTED[chat]).items():
        value = body.get(name)
        if value is not None and not any(type(value) is type(a) and value == a for a in allowed):
            code = "unsupported_value" if allowed else "unsupported_parameter"
            raise invalid(f"{name}: {shown(value)} is not supported (only "
                          f"{allowed_values(allowed)})",
                          param=name, code=code)  # fmt: skip


def check_fields(body: Mapping[str, Any], chat: bool) -> None:
    """A 400 naming the first field ``body`` may not carry (in its order), or the first
    of :data:`UNSUPPORTED` at a value that would change the output."""
    known = {*APPLIED, *OWN[chat], *UNSUPPORTED, *ROUTE_UNSUPPORTED[chat], *IGNORED}
    for name, value in body.items():
        if name in known or value is None:
            continue
        if name in OWN[not chat]:
            raise invalid(f"{name} is a field of {ROUTES[not chat]}, not of {ROUTES[chat]}",
                          param=name, code=UNKNOWN)  # fmt: skip
        raise invalid(f"unknown field {shown(name)}: this endpoint does not apply it, so it "
                      f"refuses it (it ignores only {', '.join(IGNORED)})",
                      param=clip(name), code=UNKNOWN)  # fmt: skip
    _unsupported(body, chat)


def parse_stream(body: Mapping[str, Any]) -> tuple[bool, bool]:
    """``stream`` and ``stream_options.include_usage``: booleans; ``stream_options`` only
    with ``stream: true`` (as OpenAI), its one field ``include_usage``."""
    stream = body.get("stream")
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise invalid(f"stream must be a boolean, got {shown(stream)}", param="stream")
    options = body.get("stream_options")
    if options is None:
        return stream, False
    if not stream:
        raise invalid("stream_options is only allowed when stream is true",
                      param="stream_options")  # fmt: skip
    if not isinstance(options, dict):
        raise invalid(f"stream_options must be an object, got {shown(options)}",
                      param="stream_options")  # fmt: skip
    unknown = [key for key in options if key != "include_usage"]
    if unknown:
        raise invalid(f"stream_options has unknown fields {shown(unknown)} (known: "
                      "include_usage)", param="stream_options", code=UNKNOWN)  # fmt: skip
    usage = options.get("include_usage")
    if usage is not None and not isinstance(usage, bool):
        raise invalid(f"stream_options.include_usage must be a boolean, got {shown(usage)}",
                      param="stream_options.include_usage")  # fmt: skip
    return stream, bool(usage)
