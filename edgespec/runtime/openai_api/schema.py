"""Request bodies of ``/v1/completions`` and ``/v1/chat/completions``, checked field by
field into a :class:`ParsedRequest`; a bad field is a 400 naming it (``param``). Which
fields a request may carry: :mod:`.fields`; the prompt, bounded before it is tokenized:
:mod:`.messages`."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgespec.core.stop_rules import MAX_STOP, MAX_STOP_CHARS
from edgespec.core.wire_limits import SEED_LIMIT, UINT32_LIMIT
from edgespec.runtime.openai_api.body import utf8_text
from edgespec.runtime.openai_api.chat_fields import chat_rendering
from edgespec.runtime.openai_api.chat_prompt import DEFAULT_RENDERING, ChatRendering
from edgespec.runtime.openai_api.errors import invalid, shown
from edgespec.runtime.openai_api.extension import WindowChoice, parse_extension
from edgespec.runtime.openai_api.fields import boolean_field, check_fields, parse_stream
from edgespec.runtime.openai_api.messages import (
    CHARS_PER_TOKEN,
    Prompt,
    max_prompt_chars,
    parse_prompt,
)
from edgespec.runtime.openai_api.sampling_fields import (
    SamplingFields,
    integer_field,
    parse_logprobs,
    parse_min_tokens,
    parse_num_choices,
    parse_sampling,
)

MAX_STOP_TOKEN_IDS = 64
"""The most ``stop_token_ids`` a request names (vLLM's field: tokens that end the output)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may ask for: body size (413 beyond), prompt and output tokens (400)."""

    max_body_bytes: int = 1 << 20
    max_prompt_tokens: int = 2048
    max_tokens: int = 1024
    chars_per_token: int = CHARS_PER_TOKEN
    """A prompt's characters allowed per token before tokenizing: the endpoint's
    tokenizer's longest token (:func:`.messages.longest_token_chars`)."""

    @property
    def max_prompt_chars(self) -> int:
        """The most characters of a prompt (``chars_per_token`` per token)."""
        return max_prompt_chars(self.max_prompt_tokens, self.chars_per_token)


@dataclass(frozen=True, slots=True)
class Defaults:
    """Values of fields a request leaves out (from the drafter config)."""

    max_tokens: int = 64
    temperature: float = 0.0
    slo_class: str = "default"
    mode: str = "distributed"  # edgespec.mode (a centralized endpoint's: "centralized")


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """One checked request; ``prompt`` is text, token ids, or chat ``messages``."""

    model: str
    prompt: Prompt
    max_tokens: int
    sampling: SamplingFields
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    slo_class: str
    window: WindowChoice | None
    max_tokens_field: str = "max_tokens"  # or, in chat, max_completion_tokens when given
    stop_token_ids: frozenset[int] = frozenset()  # end the text before any of them
    ignore_eos: bool = False  # run to max_tokens past the target's end of sequence
    echo: bool = False  # /v1/completions: the prompt's text before the completion's
    min_tokens: int = 0  # no end of sequence, stop token or stop sequence before this many
    n: int = 1  # choices, generated one after another
    logprobs: int | None = None  # alternatives beside each returned token's (None: none)
    chat_rendering: ChatRendering = DEFAULT_RENDERING  # chat: how the messages are rendered
    mode: str = "distributed"  # edgespec.mode: or "centralized", the server decoding alone


class _DuplicateKey(Exception):
    """A JSON object of the body names ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (``json``'s ``object_pairs_hook``)."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def _surrogate_at(body: Any) -> tuple[str, str | None]:
    """Where in ``body`` the first string holding a lone surrogate is (``messages[0].content``;
    ``<key>`` when it is an object's key) and the top-level field it is in."""
    todo: list[tuple[str, str | None, Any]] = [("request body", None, body)]
    while todo:
        where, top, value = todo.pop()
        if isinstance(value, str) and _not_text(value):
            return where, top
        items = value.items() if isinstance(value, dict) else (
            enumerate(value) if isinstance(value, list) else ())  # fmt: skip
        for key, item in reversed(list(items)):
            if isinstance(key, str) and _not_text(key):
                return f"a key of {where}", top
            if isinstance(key, str):
                at = key if top is None else f"{where}.{key}"
            else:
                at = f"{where}[{key}]"
            todo.append((at, top if top is not None else str(key), item))
    return "request body", None


def _not_text(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:
        return True
    return False


def decode_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body (its size was bounded as it was read:
    :func:`edgespec.runtime.openai_api.body.read_body`): 400 when not UTF-8
    (:func:`~edgespec.runtime.openai_api.body.utf8_text`), not a JSON object, or when an
    object of it names a key twice (which value counts would be a guess)."""
    text = utf8_text(raw)
    try:
        body = json.loads(text, object_pairs_hook=_unique_keys)
        json.dumps(body, ensure_ascii=False).encode()  # a lone surrogate ("\ud800") is no text
    except UnicodeEncodeError as exc:
        where, key = _surrogate_at(body)
        raise invalid(f"request body is not valid JSON text: {where} holds a lone UTF-16 "
                      f"surrogate (\\u{ord(exc.object[exc.start]):04x}), which is no "
                      "character", param=key, code="invalid_json") from None  # fmt: skip
    except (UnicodeError, json.JSONDecodeError) as exc:
        raise invalid(f"request body is not valid JSON: {exc}", code="invalid_json") from None
    except RecursionError:
        raise invalid("request body is not valid JSON: nested too deeply",
                      code="invalid_json") from None  # fmt: skip
    except _DuplicateKey as exc:
        raise invalid(f"request body names the key {shown(exc.key)} twice in one object: give "
                      "each key once", code="duplicate_key") from None  # fmt: skip
    except ValueError:  # an integer of more digits than Python converts
        limit = sys.get_int_max_str_digits()
        raise invalid(f"request body holds an integer of more than {limit:,} digits, which no "
                      "field takes", code="invalid_json") from None  # fmt: skip
    if not isinstance(body, dict):
        raise invalid(f"request body must be a JSON object, got {shown(body)}")
    return body


def _max_tokens(
    body: Mapping[str, Any], chat: bool, defaults: Defaults, limits: Limits
) -> tuple[str, int]:
    """``max_tokens`` and the field that gave it; in chat also ``max_completion_tokens`` (its
    newer name): either one, both only when equal, a null one as absent; 0 on
    ``/v1/completions`` with ``echo`` (the prompt alone, with its log-probabilities)."""
    names = ("max_completion_tokens", "max_tokens") if chat else ("max_tokens",)
    given: dict[str, int] = {}
    for name in names:
        value = integer_field(body, name, None)
        if value is not None:
            given[name] = value
    if len(set(given.values())) > 1:
        raise invalid(f"max_completion_tokens ({shown(given['max_completion_tokens'])}) and "
                      f"max_tokens ({shown(given['max_tokens'])}) differ: give one",
                      param="max_completion_tokens")  # fmt: skip
    name, value = next(iter(given.items()), ("max_tokens", defaults.max_tokens))
    if value == 0 and not chat:  # OpenAI's legacy completions: the prompt scored alone
        if body.get("echo") is True:
            return name, value
        raise invalid("max_tokens 0 returns the prompt alone: it needs echo: true",
                      param=name)  # fmt: skip
    if not 1 <= value <= limits.max_tokens:
        raise invalid(f"{name} must be in [1, {limits.max_tokens}] (--openai-max-tokens), "
                      f"got {shown(value)}",
                      param=name)  # fmt: skip
    return name, value


def _seed(body: Mapping[str, Any]) -> int | None:
    """``seed``: an int64 as OpenAI's (some clients send -1), a negative one taken modulo
    2**63, the wire's range (-1 draws as 2**63 − 1 does)."""
    seed = integer_field(body, "seed", None)
    if seed is not None and not -SEED_LIMIT <= seed < SEED_LIMIT:
        raise invalid(f"seed must be in [-2**63, 2**63) (OpenAI's int64), got {shown(seed)}",
                      param="seed")  # fmt: skip
    return None if seed is None else seed % SEED_LIMIT


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    """``stop``: a string or a list of at most ``MAX_STOP`` (an empty list: none)."""
    value = body.get("stop")
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if isinstance(stops, list) and len(stops) > MAX_STOP:
        raise invalid(f"stop takes at most {MAX_STOP} sequences, got {len(stops)}", param="stop")
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise invalid(f"stop must be a non-empty string or a list of them, got {shown(value)}",
                      param="stop")  # fmt: skip
    longest = max((len(s) for s in stops), default=0)
    if longest > MAX_STOP_CHARS:
        raise invalid(f"a stop sequence has at most {MAX_STOP_CHARS} characters, got {longest}",
                      param="stop")  # fmt: skip
    return tuple(stops)


def _stop_token_ids(body: Mapping[str, Any]) -> frozenset[int]:
    """``stop_token_ids``: at most ``MAX_STOP_TOKEN_IDS`` token ids (below 2**32, the wire's
    uint32; against the target's vocabulary once the endpoint knows it)."""
    value = body.get("stop_token_ids")
    if value is None:
        return frozenset()
    if isinstance(value, list) and len(value) > MAX_STOP_TOKEN_IDS:
        raise invalid(f"stop_token_ids takes at most {MAX_STOP_TOKEN_IDS} token ids, got "
                      f"{len(value)}", param="stop_token_ids")  # fmt: skip
    if not isinstance(value, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and 0 <= t < UINT32_LIMIT for t in value
    ):
        raise invalid(f"stop_token_ids must be a list of token ids (integers >= 0), got "
                      f"{shown(value)}", param="stop_token_ids")  # fmt: skip
    return frozenset(value)


def _boolean(body: Mapping[str, Any], name: str) -> bool:
    """Field ``name``, a boolean (absent or null: false): ``ignore_eos`` (vLLM's: run to
    ``max_tokens`` past any end of sequence or, in chat, end of turn, the load generators'
    fixed output lengths) or ``echo`` (the prompt's text before the completion's)."""
    return boolean_field(body, name, False)


def parse_request(
    body: Mapping[str, Any], chat: bool, defaults: Defaults, limits: Limits
) -> ParsedRequest:
    """``body`` checked; ``chat``: a ``/v1/chat/completions`` body (``messages``)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model is required (a string; see /v1/models)", param="model")
    check_fields(body, chat)
    max_tokens_field, max_tokens = _max_tokens(body, chat, defaults, limits)
    stream, include_usage = parse_stream(body)
    ext = parse_extension(body, defaults.slo_class, defaults.mode)
    prompt = parse_prompt(body, chat, limits.max_prompt_tokens, limits.chars_per_token)
    return ParsedRequest(
        model=model,
        prompt=prompt,
        max_tokens=max_tokens,
        sampling=parse_sampling(body, defaults.temperature),
        seed=_seed(body),
        stop=_stop(body),
        stream=stream,
        include_usage=include_usage,
        slo_class=ext.slo_class,
        window=ext.window,
        max_tokens_field=max_tokens_field,
        stop_token_ids=_stop_token_ids(body),
        ignore_eos=_boolean(body, "ignore_eos"),
        echo=not chat and _boolean(body, "echo"),
        min_tokens=parse_min_tokens(body, max_tokens),
        n=parse_num_choices(body),
        logprobs=parse_logprobs(body, chat),
        chat_rendering=chat_rendering(body) if chat else DEFAULT_RENDERING,
        mode=ext.mode,
    )
