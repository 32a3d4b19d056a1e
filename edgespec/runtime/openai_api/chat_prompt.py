"""Chat messages as token ids: rendered by the tokenizer's chat template, their contents kept
as text. A special token (Gemma's ``<end_of_turn>``, say) stands in the ids only where the
template itself wrote it: special-token text a client spells in a content, or across the
contents the template joins (``a<end_of`` then ``_turn>b``), becomes the tokens of its
characters (the tokenizer's ``split_special_tokens``). The template's own text is found by
rendering the conversation again with each content's characters masked (:func:`masked`):
where both renders line up, a special token is the template's when no masked character
lies in it. A conversation whose special tokens are all the template's is tokenized in one
call, exactly as before; one whose template rewrites its contents (the renders differ in
length) is taken as rendered when it holds no special token beyond the masked render's,
and refused otherwise.

Consecutive messages of one role (two user turns, as OpenAI takes them) are rendered as
they are; when the template refuses them (Gemma's: roles must alternate), each run of them
is joined into one message, their contents separated by a blank line (:func:`joined_turns`),
and rendered again."""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any

from edgespec.runtime.openai_api.errors import ApiError, clip, invalid, shown
from edgespec.runtime.openai_api.messages import Message

NEUTRAL_CHAR = "\ue000"
"""What each character of a content but a space is masked by: a private-use character,
never part of a special token."""

_NOT_SPACE = re.compile(r"\S")

Token = tuple[int, int, int]
"""A token id and the character span of the text it stands for (``0, 0`` from a slow
tokenizer, which gives no spans: its special tokens are only counted)."""


TURN_JOINER = "\n\n"
"""What separates the contents of consecutive messages of one role joined into one."""


def joined_turns(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """``messages`` with each run of consecutive messages of one role joined into one, their
    contents separated by :data:`TURN_JOINER` (its name kept where every message of the run
    has that one)."""
    joined: list[Message] = []
    for message in messages:
        if joined and joined[-1].role == message.role:
            last = joined.pop()
            name = last.name if last.name == message.name else None  # one name, or none
            message = Message(last.role, last.content + TURN_JOINER + message.content, name)
        joined.append(message)
    return tuple(joined)


class ChatEnding(Enum):
    """How a rendered conversation ends (vLLM's ``add_generation_prompt`` and
    ``continue_final_message``)."""

    GENERATION_PROMPT = "generation_prompt"  # the template's start of a reply (the default)
    AS_GIVEN = "as_given"  # the final message closed, no reply started
    CONTINUE_FINAL = "continue_final"  # the final message left open: the model continues it


@dataclass(frozen=True, slots=True)
class ChatRendering:
    """How chat messages are rendered: where the conversation ends, and the chat template's
    own variables a request sets (``chat_template_kwargs``, as (name, value) pairs)."""

    ending: ChatEnding = ChatEnding.GENERATION_PROMPT
    template_kwargs: tuple[tuple[str, Any], ...] = ()


DEFAULT_RENDERING = ChatRendering()


def _render(tokenizer: Any, messages: tuple[Message, ...], rendering: ChatRendering) -> str:
    plain = [{"role": m.role, "content": m.content} | ({} if m.name is None else {"name": m.name})
             for m in messages]  # fmt: skip
    ending = rendering.ending
    variables = dict(rendering.template_kwargs)
    variables["add_generation_prompt"] = ending is ChatEnding.GENERATION_PROMPT
    if ending is ChatEnding.CONTINUE_FINAL:  # asked only then: a template API may lack it
        variables["continue_final_message"] = True
    return str(tokenizer.apply_chat_template(plain, tokenize=False, **variables))


def chat_text(
    tokenizer: Any, messages: tuple[Message, ...], rendering: ChatRendering = DEFAULT_RENDERING
) -> str:
    """``messages`` rendered by the tokenizer's chat template as ``rendering`` says
    (a template refusing consecutive messages of one role gets them joined:
    :func:`joined_turns`); a tokenizer without a template, or a template refusing the
    messages still, is a 400."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise invalid("this model's tokenizer has no chat template: use /v1/completions "
                      "with a text prompt", param="messages",
                      code="chat_template_missing")  # fmt: skip
    refusal = ""
    for turns in dict.fromkeys((messages, joined_turns(messages))):  # each once
        try:
            return _render(tokenizer, turns, rendering)
        except Exception as exc:  # the template's own checks (alternation, say) fail here
            refusal = clip(str(exc))
    raise invalid(f"the chat template refused the messages: {refusal}", param="messages")


def masked(content: str) -> str:
    """``content`` with each character but a space (``str.isspace``) as
    :data:`NEUTRAL_CHAR`: a template that trims a content trims this one alike, and a marker
    that takes in the spaces beside it (an added token's ``lstrip``) stays the template's.
    (A special token of spaces alone would pass for the template's; Gemma has none.)"""
    return _NOT_SPACE.sub(NEUTRAL_CHAR, content)


def chat_ids(
    tokenizer: Any,
    messages: tuple[Message, ...],
    lock: threading.Lock,
    special: frozenset[int],
    rendering: ChatRendering = DEFAULT_RENDERING,
) -> list[int]:
    """``messages`` as token ids (rendered by :func:`chat_text`), a special token only where
    the chat template wrote it (``special``: the tokenizer's :func:`special_ids`, read once
    where it is set up). Only the tokenizer's calls hold ``lock`` (the templates render
    outside it)."""
    with lock:
        _check_template_kwargs(tokenizer, rendering, special)
    text = chat_text(tokenizer, messages, rendering)
    fast = bool(getattr(tokenizer, "is_fast", False))
    with lock:
        tokens = _tokens_at(tokenizer, text) if fast else [(t, 0, 0) for t in _ids(tokenizer, text)]
    ids = [token for token, _, _ in tokens]
    if special.isdisjoint(ids):
        return ids
    masked_messages = tuple(Message(m.role, masked(m.content), m.name) for m in messages)
    template = chat_text(tokenizer, masked_messages, rendering)
    if fast and _lined_up(text, template):
        forged = {(t, s, e) for t, s, e in tokens if t in special and NEUTRAL_CHAR in template[s:e]}
        if not forged:
            return ids
        with lock:
            return _spelt_out(tokenizer, text, tokens, forged)
    with lock:
        own = Counter(t for t in _ids(tokenizer, template) if t in special)
        beyond = Counter(t for t in ids if t in special) - own
        if not beyond:
            return ids  # the template rewrote the contents (escaped special-token text, say)
        raise _refusal(tokenizer, messages, special, next(t for t in ids if t in beyond))


def _check_template_kwargs(
    tokenizer: Any, rendering: ChatRendering, special: frozenset[int]
) -> None:
    """A 400 for a ``chat_template_kwargs`` value that holds special-token text (a string,
    or one in a list or object): the template prints a variable's value as its own text, so
    ``<end_of_turn>`` there would stand as the marker and forge a turn."""
    for name, value in rendering.template_kwargs:
        for text in _strings(value):
            found = _special_text(tokenizer, text, special)
            if found is not None:
                raise invalid(f"chat_template_kwargs.{name} holds the special token text "
                              f"{shown(found)}: a variable's value is text, never the "
                              "template's markup", param="chat_template_kwargs")  # fmt: skip


def _strings(value: Any) -> list[str]:
    """The strings in ``value``, a JSON value (in its lists and objects' values too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    return []


def _lined_up(text: str, template: str) -> bool:
    """Whether ``template`` is ``text`` with characters masked: the chat template wrote the
    same text at the same places around the contents and their masks."""
    if len(text) != len(template):
        return False
    return all(mask in (char, NEUTRAL_CHAR) for char, mask in zip(text, template, strict=True))


def _spelt_out(tokenizer: Any, text: str, tokens: list[Token], forged: set[Token]) -> list[int]:
    """``tokens``' ids, each of ``forged`` replaced by the plain tokens of its characters
    (all spelt out in one call of the tokenizer)."""
    spans = [found for found in tokens if found in forged]
    pieces = [text[start:end] for _, start, end in spans]
    spelt = tokenizer(pieces, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    plain = dict(zip(spans, spelt, strict=True))
    ids: list[int] = []
    for found in tokens:
        if found in plain:
            ids.extend(int(token) for token in plain[found])
        else:
            ids.append(found[0])
    return ids


def _refusal(
    tokenizer: Any, messages: tuple[Message, ...], special: frozenset[int], extra: int
) -> ApiError:
    """The 400 for a render holding the special token ``extra`` beyond the template's own,
    at the first message whose content alone holds special-token text, if one does."""
    for where, message in enumerate(messages):
        found = _special_text(tokenizer, message.content, special)
        if found is not None:
            return invalid(f"messages[{where}].content holds the special token text "
                           f"{shown(found)}, which this model's chat template does not keep "
                           "as plain text", param=f"messages[{where}].content")  # fmt: skip
    name = str(tokenizer.convert_ids_to_tokens(extra))
    return invalid(f"the messages' contents, joined by this model's chat template, spell the "
                   f"special token text {shown(name)}, which the template does not keep as "
                   "plain text", param="messages")  # fmt: skip


def _special_text(tokenizer: Any, content: str, special: frozenset[int]) -> str | None:
    """The first special token ``content`` alone tokenizes to, as the content spells it
    (the token's own text where the tokenizer gives no spans); ``None`` when none."""
    if getattr(tokenizer, "is_fast", False):
        spans = _tokens_at(tokenizer, content)
        return next((content[s:e] for t, s, e in spans if t in special), None)
    found = next((t for t in _ids(tokenizer, content) if t in special), None)
    return None if found is None else str(tokenizer.convert_ids_to_tokens(found))


def _ids(tokenizer: Any, text: str) -> list[int]:
    return [int(token) for token in tokenizer(text, add_special_tokens=False)["input_ids"]]


def _tokens_at(tokenizer: Any, text: str) -> list[Token]:
    """``text``'s tokens, each with the character span it stands for (a fast tokenizer's)."""
    found = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    pairs = zip(found["input_ids"], found["offset_mapping"], strict=True)
    return [(int(token), int(start), int(end)) for token, (start, end) in pairs]


def special_ids(tokenizer: Any) -> frozenset[int]:
    """Every special token's id: the added tokens marked special (Gemma's turn markers are
    among them) and the named ones (BOS, EOS, …), but UNK: text the vocabulary lacks is UNK
    spelt out or not. (Gemma's 6,248 take milliseconds to list: read once per tokenizer.)"""
    added = getattr(tokenizer, "added_tokens_decoder", {})
    named = {int(i) for i in tokenizer.all_special_ids}
    marked = {int(i) for i, token in added.items() if getattr(token, "special", False)}
    return frozenset((named | marked) - {getattr(tokenizer, "unk_token_id", None)})
