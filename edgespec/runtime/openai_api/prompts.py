"""A request's prompt as token ids: text through the tokenizer, token ids checked against
the target's vocabulary, chat messages through the tokenizer's chat template (their
special-token text kept as text, :mod:`.chat_prompt`). The prompt was bounded as it was
parsed (:mod:`.messages`); only the tokenizer itself runs under :data:`TOKENIZER_LOCK` (a
chat template is rendered outside it)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, cast

from edgespec.runtime.openai_api.chat_prompt import DEFAULT_RENDERING, ChatRendering, chat_ids
from edgespec.runtime.openai_api.errors import invalid, shown
from edgespec.runtime.openai_api.messages import Message, Prompt, is_chat, prompt_limit
from edgespec.runtime.openai_api.schema import Limits

TOKENIZER_LOCK = threading.Lock()
"""Fast tokenizers refuse concurrent use ("Already borrowed"): every call holds this."""


def check_vocabulary(ids: Iterable[int], vocab_size: int, what: str, param: str) -> None:
    """A 400 at ``param`` naming the first five of ``ids`` (as given) the target's
    vocabulary of ``vocab_size`` lacks, called ``what``."""
    if bad := [t for t in ids if t >= vocab_size]:
        raise invalid(f"{what} {shown(bad[:5])} are outside the target's vocabulary of "
                      f"{vocab_size}", param=param)  # fmt: skip


def prompt_ids(
    tokenizer: Any,
    special: frozenset[int],
    prompt: Prompt,
    vocab_size: int,
    limits: Limits,
    rendering: ChatRendering = DEFAULT_RENDERING,
) -> tuple[int, ...]:
    """``prompt`` (text, token ids or chat messages) as token ids, at most
    ``limits.max_prompt_tokens`` of them (``special``: the tokenizer's special tokens,
    :func:`.chat_prompt.special_ids`); chat messages rendered as ``rendering`` says."""
    if isinstance(prompt, str):
        with TOKENIZER_LOCK:
            ids = tuple(tokenizer(prompt)["input_ids"])
    elif needs_tokenizer(prompt):
        messages = cast(tuple[Message, ...], prompt)
        ids = tuple(chat_ids(tokenizer, messages, TOKENIZER_LOCK, special, rendering))
    else:
        ids = cast(tuple[int, ...], prompt)
        check_vocabulary(ids, vocab_size, "prompt token ids", "prompt")
    if not ids:
        raise invalid("the prompt is empty after tokenization", param=prompt_param(prompt))
    if len(ids) > limits.max_prompt_tokens:
        raise invalid(f"the prompt is {len(ids)} tokens, over the limit of "
                      f"{prompt_limit(limits.max_prompt_tokens)}", param=prompt_param(prompt),
                      code="context_length_exceeded")  # fmt: skip
    return ids


def needs_tokenizer(prompt: Prompt) -> bool:
    """Whether ``prompt`` is text or messages (token ids need no tokenizer)."""
    return isinstance(prompt, str) or is_chat(prompt)


def prompt_param(prompt: Prompt) -> str:
    """The field that carried ``prompt``: ``messages`` in chat, else ``prompt``."""
    return "messages" if is_chat(prompt) else "prompt"
