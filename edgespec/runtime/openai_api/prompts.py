"""A request's prompt as token ids: text through the tokenizer, token ids checked against
the target's vocabulary, chat messages through the tokenizer's chat template."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from edgespec.runtime.openai_api.errors import invalid
from edgespec.runtime.openai_api.schema import Limits

TOKENIZER_LOCK = threading.Lock()
"""Fast tokenizers refuse concurrent use ("Already borrowed"): every call holds this."""


def _content(message: Mapping[str, Any], index: int) -> str:
    """A message's text: a string, or the ``text`` of its ``{"type": "text"}`` parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in content
    ):
        return "".join(p["text"] for p in content)
    raise invalid(f"messages[{index}].content must be a string or a list of text parts",
                  param=f"messages[{index}].content")  # fmt: skip


def _chat_text(tokenizer: Any, messages: tuple[Mapping[str, Any], ...]) -> str:
    if getattr(tokenizer, "chat_template", None) is None:
        raise invalid("this model's tokenizer has no chat template: use /v1/completions "
                      "with a text prompt", param="messages",
                      code="chat_template_missing")  # fmt: skip
    plain = [{"role": m["role"], "content": _content(m, i)} for i, m in enumerate(messages)]
    try:
        return str(tokenizer.apply_chat_template(plain, tokenize=False,
                                                 add_generation_prompt=True))  # fmt: skip
    except Exception as exc:  # the template's own checks (roles, alternation) fail here
        raise invalid(f"the chat template refused the messages: {exc}",
                      param="messages") from None  # fmt: skip


def prompt_ids(tokenizer: Any, prompt: Any, vocab_size: int, limits: Limits) -> tuple[int, ...]:
    """``prompt`` (text, token ids or chat messages) as token ids, at most
    ``limits.max_prompt_tokens`` of them."""
    if isinstance(prompt, tuple) and prompt and isinstance(prompt[0], int):
        ids = tuple(int(t) for t in prompt)
        bad = [t for t in ids if t >= vocab_size]
        if bad:
            raise invalid(f"prompt token ids {bad[:5]} are outside the target's vocabulary "
                          f"of {vocab_size}", param="prompt")  # fmt: skip
    else:
        with TOKENIZER_LOCK:
            if isinstance(prompt, str):
                ids = tuple(tokenizer(prompt)["input_ids"])
            else:
                text = _chat_text(tokenizer, prompt)
                ids = tuple(tokenizer(text, add_special_tokens=False)["input_ids"])
    if not ids:
        raise invalid("the prompt is empty after tokenization", param="prompt")
    if len(ids) > limits.max_prompt_tokens:
        raise invalid(f"the prompt is {len(ids)} tokens, over the limit of "
                      f"{limits.max_prompt_tokens}", param="prompt",
                      code="context_length_exceeded")  # fmt: skip
    return ids
