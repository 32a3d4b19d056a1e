"""A chat request's rendering fields, vLLM's, read into a :class:`ChatRendering` (the same
on ``/v1/chat/completions`` and ``/tokenize``): ``add_generation_prompt`` (default true),
``continue_final_message`` (default false; both true refused as vLLM refuses them) and
``chat_template_kwargs``, the chat template's own variables (Qwen3's ``enable_thinking``,
say): at most :data:`MAX_TEMPLATE_KWARGS` of them, each named as a Jinja variable, none of
the names the endpoint passes the template itself (:data:`RESERVED`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from edgespec.runtime.openai_api.chat_prompt import ChatEnding, ChatRendering
from edgespec.runtime.openai_api.errors import invalid, shown
from edgespec.runtime.openai_api.fields import boolean_field

MAX_TEMPLATE_KWARGS = 16
"""The most variables ``chat_template_kwargs`` may set."""

RESERVED = frozenset({
    "messages", "conversation", "tools", "documents", "chat_template", "add_generation_prompt",
    "continue_final_message", "tokenize", "padding", "truncation", "max_length",
    "return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs",
})  # fmt: skip
"""What the endpoint passes the template (or transformers' renderer) itself."""

VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""What a template variable set by a request may be named (a Jinja name, at most 64)."""
_FIELDS = ("add_generation_prompt", "continue_final_message")  # fields of the request's own


def chat_ending(body: Mapping[str, Any]) -> ChatEnding:
    """A chat body's ``add_generation_prompt`` and ``continue_final_message``."""
    generation = boolean_field(body, "add_generation_prompt", True)
    if not boolean_field(body, "continue_final_message", False):
        return ChatEnding.GENERATION_PROMPT if generation else ChatEnding.AS_GIVEN
    if generation:
        raise invalid("continue_final_message continues the final message, so it needs "
                      "add_generation_prompt false (true by default)",
                      param="continue_final_message")  # fmt: skip
    return ChatEnding.CONTINUE_FINAL


def template_kwargs(body: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``chat_template_kwargs``: an object of at most :data:`MAX_TEMPLATE_KWARGS` variables,
    as (name, value) pairs in the body's order (absent or null: none)."""
    given = body.get("chat_template_kwargs")
    param = "chat_template_kwargs"
    if given is None:
        return ()
    if not isinstance(given, dict):
        raise invalid(f"chat_template_kwargs must be an object of the chat template's "
                      f"variables, got {shown(given)}", param=param)  # fmt: skip
    if len(given) > MAX_TEMPLATE_KWARGS:
        raise invalid(f"chat_template_kwargs sets {len(given)} variables, over the limit of "
                      f"{MAX_TEMPLATE_KWARGS}", param=param)  # fmt: skip
    for name in given:
        if not VARIABLE_NAME.fullmatch(name):
            raise invalid(f"chat_template_kwargs: {shown(name)} is no template variable name "
                          "(letters, digits and _, not first a digit; at most 64)",
                          param=param)  # fmt: skip
        if name in RESERVED:
            own = " (give it as a field of its own)" if name in _FIELDS else ""
            raise invalid(f"chat_template_kwargs.{name}: the endpoint sets it{own}",
                          param=param)  # fmt: skip
    return tuple(given.items())


def chat_rendering(body: Mapping[str, Any]) -> ChatRendering:
    """How a chat body's messages are rendered."""
    return ChatRendering(chat_ending(body), template_kwargs(body))
