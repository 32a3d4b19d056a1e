"""Chat messages as token ids: rendered by the tokenizer's chat template, their contents kept
as text. A message whose content spells one of the tokenizer's special tokens (Gemma's
``<end_of_turn>``, say) would otherwise be tokenized as that token, so a client could forge
turn markers or an end of text inside its own message; here such text becomes the tokens
of its characters, the way :func:`plain_ids` spells it, while the template's own markers
stay special tokens. A conversation without such text is tokenized exactly as before, in
one call."""

from __future__ import annotations

import threading
from typing import Any

from edgespec.runtime.openai_api.errors import clip, invalid, shown
from edgespec.runtime.openai_api.messages import Message

NEUTRAL_CHAR = "\ue000"
"""What a content's special-token text is replaced by (one per character) to find where the
template's own markers are: a private-use character, never part of a special token."""


def chat_text(tokenizer: Any, messages: tuple[Message, ...]) -> str:
    """``messages`` rendered by the tokenizer's chat template, a generation prompt added;
    a tokenizer without a template, or a template refusing the messages, is a 400."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise invalid("this model's tokenizer has no chat template: use /v1/completions "
                      "with a text prompt", param="messages",
                      code="chat_template_missing")  # fmt: skip
    plain = [{"role": m.role, "content": m.content} for m in messages]
    try:
        return str(tokenizer.apply_chat_template(plain, tokenize=False,
                                                 add_generation_prompt=True))  # fmt: skip
    except Exception as exc:  # the template's own checks (alternation, say) fail here
        raise invalid(f"the chat template refused the messages: {clip(str(exc))}",
                      param="messages") from None  # fmt: skip


def chat_ids(tokenizer: Any, messages: tuple[Message, ...], lock: threading.Lock) -> list[int]:
    """``messages`` as token ids, special-token text in their contents as plain text.
    Only the tokenizer's calls hold ``lock`` (the templates render outside it)."""
    text = chat_text(tokenizer, messages)
    with lock:
        spans = [_special_spans(tokenizer, m.content) for m in messages]
    if not any(spans):
        with lock:
            return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    pairs = zip(messages, spans, strict=True)
    neutral = tuple(Message(m.role, _neutralized(m.content, s)) for m, s in pairs)
    markers_text = chat_text(tokenizer, neutral)
    with lock:
        if len(markers_text) == len(text):
            return _kept_as_text(tokenizer, text, markers_text)
        ids = [token for token, _, _ in _tokens_at(tokenizer, text)]
        special = _special_ids(tokenizer)
        markers = [token for token, _, _ in _tokens_at(tokenizer, markers_text)]
    if [t for t in ids if t in special] == [t for t in markers if t in special]:
        return ids  # the template rewrote the special-token text itself (escaped it, say)
    where = next(i for i, s in enumerate(spans) if s)
    found = messages[where].content[slice(*spans[where][0])]
    raise invalid(f"messages[{where}].content holds the special token text {shown(found)}, "
                  "which this model's chat template does not keep as plain text",
                  param=f"messages[{where}].content")  # fmt: skip


def plain_ids(tokenizer: Any, text: str) -> list[int]:
    """``text``'s tokens with special-token text spelt out as characters."""
    return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def _special_spans(tokenizer: Any, content: str) -> list[tuple[int, int]]:
    """Where ``content`` alone tokenizes to a special token (character spans); none when
    its tokens are the same with special tokens spelt out."""
    ids = list(tokenizer(content, add_special_tokens=False)["input_ids"])
    if ids == plain_ids(tokenizer, content):
        return []
    if not getattr(tokenizer, "is_fast", False):
        raise invalid("a message's content holds special-token text, which this model's "
                      "tokenizer (not a fast one) cannot keep as plain text",
                      param="messages")  # fmt: skip
    special = _special_ids(tokenizer)
    tokens = _tokens_at(tokenizer, content)
    return [(start, end) for token, start, end in tokens if token in special]


def _neutralized(content: str, spans: list[tuple[int, int]]) -> str:
    chars = list(content)
    for start, end in spans:
        chars[start:end] = NEUTRAL_CHAR * (end - start)
    return "".join(chars)


def _kept_as_text(tokenizer: Any, text: str, markers_text: str) -> list[int]:
    """``text``'s tokens, but a special token the template did not write (it is not at that
    place in ``markers_text``, where contents hold no special-token text) replaced by the
    plain tokens of its characters."""
    special = _special_ids(tokenizer)
    owned = {found for found in _tokens_at(tokenizer, markers_text) if found[0] in special}
    ids: list[int] = []
    for token, start, end in _tokens_at(tokenizer, text):
        if token in special and (token, start, end) not in owned:
            ids.extend(plain_ids(tokenizer, text[start:end]))
        else:
            ids.append(token)
    return ids


def _tokens_at(tokenizer: Any, text: str) -> list[tuple[int, int, int]]:
    """``text``'s tokens, each with the character span it stands for."""
    found = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    pairs = zip(found["input_ids"], found["offset_mapping"], strict=True)
    return [(int(token), int(start), int(end)) for token, (start, end) in pairs]


def _special_ids(tokenizer: Any) -> set[int]:
    """Every special token's id: the added tokens marked special (Gemma's turn markers are
    among them) and the named ones (BOS, EOS, …)."""
    added = getattr(tokenizer, "added_tokens_decoder", {})
    return {int(i) for i, token in added.items() if getattr(token, "special", False)} | {
        int(i) for i in tokenizer.all_special_ids
    }
