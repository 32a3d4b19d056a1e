"""A request's prompt checked and bounded before anything tokenizes it: a string of at most
``chars_per_token`` characters per prompt token allowed (the tokenizer's longest token,
:func:`longest_token_chars`, at least ``CHARS_PER_TOKEN``), at most that many token ids, or
chat messages (system or developer, user, assistant; a system message only first; a
user message somewhere) of at most as many messages and characters. Each bound is checked as the
prompt is walked, so a refused one costs no more than the limit."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgespec.runtime.openai_api.errors import ApiError, clip, invalid, shown

CHARS_PER_TOKEN = 16
"""The fewest characters a prompt may have per token of ``--openai-max-prompt-tokens``
(real text averages about 4 per token); the endpoint allows its tokenizer's longest token
when longer (:func:`longest_token_chars`: Gemma 3's is 31, a run of tabs), so a longer
prompt could never fit, and is refused before the tokenizer spends time on it."""


def longest_token_chars(tokenizer: Any) -> int:
    """The most characters one token of ``tokenizer`` can stand for, at least
    :data:`CHARS_PER_TOKEN`: its vocabulary's longest entry (an entry is never shorter than
    its text: a SentencePiece piece spells a space as one ``▁``, a byte-level BPE entry has
    a character per byte, a byte-fallback ``<0xNN>`` is one byte of a character);
    :data:`CHARS_PER_TOKEN` when the tokenizer does not list its vocabulary."""
    vocab = getattr(tokenizer, "get_vocab", None)
    entries = vocab() if callable(vocab) else {}
    return max(CHARS_PER_TOKEN, max((len(str(entry)) for entry in entries), default=0))


MAX_PROMPTS = 16
"""The most prompts one ``/v1/completions`` request batches (:mod:`.prompt_batch`)."""

ROLES = ("system", "user", "assistant")
"""The chat roles the endpoint takes (tools and their results are refused)."""
ROLE_ALIASES = {"developer": "system"}
"""OpenAI's newer name for the system role (its reasoning models'), taken as ``system``."""


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: a role of :data:`ROLES`, its text and the participant's ``name``
    (OpenAI's optional field, given to the chat template as vLLM does; ``None``: none)."""

    role: str
    content: str
    name: str | None = None


FIELDS = ("role", "content", "name")
"""A message's fields (a key given as null is absent)."""
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A participant's name as OpenAI takes it: no character of a template's markup, so a name
cannot forge a special token."""

Prompt = str | tuple[int, ...] | tuple[Message, ...]
"""A checked prompt: text, token ids, or chat messages."""


def max_prompt_chars(max_prompt_tokens: int, chars_per_token: int = CHARS_PER_TOKEN) -> int:
    return max_prompt_tokens * chars_per_token


PROMPT_FLAG = "--openai-max-prompt-tokens"
"""The endpoint's flag behind every prompt limit, named in its refusals (the operator's
lever)."""


def prompt_limit(max_prompt_tokens: int) -> str:
    """The token limit of a prompt as a refusal states it, with its flag."""
    return f"{max_prompt_tokens} tokens ({PROMPT_FLAG})"


def _over(what: str, limit: str, param: str) -> ApiError:
    return invalid(f"{what}, over the limit of {limit}", param=param,
                   code="context_length_exceeded")  # fmt: skip


def _chars(max_prompt_tokens: int, chars_per_token: int) -> str:
    """The character limit as a message states it."""
    return (f"{max_prompt_chars(max_prompt_tokens, chars_per_token)} characters "
            f"({chars_per_token} per token of {PROMPT_FLAG} {max_prompt_tokens})")  # fmt: skip


def _content(value: Any, index: int, room: int) -> str:
    """A message's text: a string, or the ``text`` of its ``{"type": "text"}`` parts, read
    until it passes ``room`` characters (the caller refuses it then)."""
    if isinstance(value, str):
        return value
    param = f"messages[{index}].content"
    if not isinstance(value, list):
        raise invalid(f"{param} must be a string or a list of text parts, got {shown(value)}",
                      param=param)  # fmt: skip
    texts: list[str] = []
    size = 0
    for part in value:
        if not (isinstance(part, dict) and part.keys() == {"type", "text"}
                and part["type"] == "text" and isinstance(part["text"], str)):  # fmt: skip
            raise invalid(f"{param} parts must be {{\"type\": \"text\", \"text\": ...}} (text "
                          f"only), got {shown(part)}", param=param,
                          code="unsupported_value")  # fmt: skip
        texts.append(part["text"])
        size += len(part["text"])
        if size > room:
            break
    return "".join(texts)


def _message(value: Any, index: int, room: int) -> Message:
    where = f"messages[{index}]"
    if not isinstance(value, dict):
        raise invalid(f"{where} must be a {{role, content}} object, got {shown(value)}",
                      param=where)  # fmt: skip
    role = value.get("role")
    role = ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
    if role not in ROLES:
        raise invalid(f"{where}.role must be one of {', '.join(ROLES)} (or developer, taken as "
                      f"system), got {shown(value.get('role'))}",
                      param=f"{where}.role")  # fmt: skip
    if role == "system" and index > 0:
        raise invalid(f"{where}.role: a system message must be the first message",
                      param=f"{where}.role")  # fmt: skip
    # a key given as null is absent (as in the request's own fields): the openai client's
    # message.model_dump() of a reply sends name, tool_calls, refusal ... as null
    extra = next((k for k in value if k not in FIELDS and value[k] is not None), None)
    if extra is not None:
        raise invalid(f"{where}.{clip(extra)} is not supported: a message takes role, "
                      "content and name only", param=f"{where}.{clip(extra)}",
                      code="unsupported_parameter")  # fmt: skip
    name = value.get("name")
    if name is not None and not (isinstance(name, str) and NAME.fullmatch(name)):
        raise invalid(f"{where}.name must be 1 to 64 letters, digits, _ or - (OpenAI's), got "
                      f"{shown(name)}", param=f"{where}.name")  # fmt: skip
    return Message(role, _content(value.get("content"), index, room), name)


def _messages(value: Any, max_prompt_tokens: int, chars_per_token: int) -> tuple[Message, ...]:
    if not isinstance(value, list) or not value:
        raise invalid(f"messages must be a non-empty list of {{role, content}} objects, got "
                      f"{shown(value)}", param="messages")  # fmt: skip
    if len(value) > max_prompt_tokens:
        raise _over(f"messages has {len(value)} messages", f"{max_prompt_tokens} (each is at "
                    f"least one token of {PROMPT_FLAG})", "messages")  # fmt: skip
    room = max_prompt_chars(max_prompt_tokens, chars_per_token)
    messages: list[Message] = []
    for index, item in enumerate(value):
        message = _message(item, index, room)
        room -= len(message.content)
        if room < 0:
            size = max_prompt_chars(max_prompt_tokens, chars_per_token) - room
            raise _over(f"the messages' content is at least {size} characters (by "
                        f"messages[{index}])", _chars(max_prompt_tokens, chars_per_token),
                        "messages")  # fmt: skip
        messages.append(message)
    if all(m.role != "user" for m in messages):
        raise invalid("messages has no user message: a conversation needs one",
                      param="messages")  # fmt: skip
    return tuple(messages)


def parse_prompt(
    body: Mapping[str, Any], chat: bool, max_prompt_tokens: int,
    chars_per_token: int = CHARS_PER_TOKEN,
) -> Prompt:  # fmt: skip
    """``messages`` (chat) or ``prompt`` checked and bounded by ``max_prompt_tokens`` (and
    ``chars_per_token`` characters a token before tokenizing)."""
    if chat:
        return _messages(body.get("messages"), max_prompt_tokens, chars_per_token)
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        if len(prompt) > max_prompt_chars(max_prompt_tokens, chars_per_token):
            raise _over(f"the prompt is {len(prompt)} characters",
                        _chars(max_prompt_tokens, chars_per_token), "prompt")  # fmt: skip
        return prompt
    if isinstance(prompt, list) and len(prompt) > max_prompt_tokens:
        raise _over(f"the prompt is {len(prompt)} tokens", prompt_limit(max_prompt_tokens),
                    "prompt")  # fmt: skip
    if (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt)
    ):
        return tuple(prompt)
    raise invalid("prompt must be a string or a non-empty list of token ids, or a list of at "
                  f"most {MAX_PROMPTS} of those, got {shown(prompt)}", param="prompt")  # fmt: skip


def is_chat(prompt: Prompt) -> bool:
    """Whether ``prompt`` is chat messages (not text or token ids)."""
    return not isinstance(prompt, str) and bool(prompt) and isinstance(prompt[0], Message)


def prompt_size(prompt: Prompt) -> int:
    """The characters a prompt gives the tokenizer (a message counts one more): what it
    weighs in the line of prompts waiting to be tokenized; token ids weigh nothing."""
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(m.content) + 1 for m in prompt if isinstance(m, Message))
