"""Request bodies of ``/v1/completions`` and ``/v1/chat/completions``, checked field by
field into a :class:`ParsedRequest`; a bad field is a 400 naming it (``param``)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgespec.core.types import SEED_LIMIT
from edgespec.runtime.openai_api.errors import invalid
from edgespec.runtime.validation import MAX_IDENTIFIER_CHARS

MAX_STOP = 4
MAX_STOP_CHARS = 256
"""The longest stop sequence: the text stream holds back what may begin one, looking at
every prefix of it after each token (time grows with its length squared)."""
UNSUPPORTED: dict[str, tuple[Any, ...]] = {
    "n": (1,),
    "best_of": (1,),
    "echo": (False,),
    "logprobs": (False,),
    "suffix": (),
    "top_logprobs": (0,),
    "presence_penalty": (0, 0.0),
    "frequency_penalty": (0, 0.0),
    "logit_bias": ({},),
    "response_format": ({"type": "text"},),
    "tools": ([],),
    "tool_choice": ("none",),
    "functions": ([],),
    "function_call": ("none",),
}
"""Fields accepted only absent, null or at these values, of their JSON type (anything else
is refused, not ignored: a penalty, a bias or a response format this endpoint would not
apply)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may ask for: body size (413 beyond), prompt and output tokens (400)."""

    max_body_bytes: int = 1 << 20
    max_prompt_tokens: int = 2048
    max_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class Defaults:
    """Values of fields a request leaves out (from the drafter config)."""

    max_tokens: int = 64
    temperature: float = 0.0
    slo_class: str = "default"


@dataclass(frozen=True, slots=True)
class WindowChoice:
    """The ``edgespec.window`` extension: a window policy by name and its parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """One checked request; ``prompt`` is text, token ids, or chat ``messages``."""

    model: str
    prompt: str | tuple[int, ...] | tuple[Mapping[str, Any], ...]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    slo_class: str
    window: WindowChoice | None


def decode_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body (its size was bounded as it was read:
    :func:`edgespec.runtime.openai_api.body.read_body`): 400 when not a JSON object."""
    try:
        body = json.loads(raw)
        json.dumps(body, ensure_ascii=False).encode()  # a lone surrogate ("\ud800") is no text
    except (UnicodeError, json.JSONDecodeError) as exc:
        raise invalid(f"request body is not valid JSON: {exc}", code="invalid_json") from None
    except RecursionError:
        raise invalid("request body is not valid JSON: nested too deeply",
                      code="invalid_json") from None  # fmt: skip
    except ValueError as exc:  # an integer of more digits than Python converts
        raise invalid(f"request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise invalid(f"request body must be a JSON object, got {type(body).__name__}")
    return body


def _number(body: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise invalid(f"{name} must be a number, got {value!r}", param=name)
    if not low <= value <= high:
        raise invalid(f"{name} must be in [{low}, {high}], got {value}", param=name)
    return float(value)


def _integer(body: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"{name} must be an integer, got {value!r}", param=name)
    return value


def _max_tokens(body: Mapping[str, Any], chat: bool, defaults: Defaults, limits: Limits) -> int:
    """``max_tokens``; in chat also ``max_completion_tokens`` (its newer name): either one,
    both only when equal, a null one as absent."""
    names = ("max_completion_tokens", "max_tokens") if chat else ("max_tokens",)
    given: dict[str, int] = {}
    for name in names:
        value = _integer(body, name, None)
        if value is not None:
            given[name] = value
    if len(set(given.values())) > 1:
        raise invalid(f"max_completion_tokens ({given['max_completion_tokens']}) and "
                      f"max_tokens ({given['max_tokens']}) differ: give one",
                      param="max_completion_tokens")  # fmt: skip
    name, value = next(iter(given.items()), ("max_tokens", defaults.max_tokens))
    if not 1 <= value <= limits.max_tokens:
        raise invalid(f"{name} must be in [1, {limits.max_tokens}], got {value}", param=name)
    return value


def _seed(body: Mapping[str, Any]) -> int | None:
    seed = _integer(body, "seed", None)
    if seed is not None and not 0 <= seed < SEED_LIMIT:
        raise invalid(f"seed must be in [0, 2**63), got {seed}", param="seed")
    return seed


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise invalid(f"stop must be a non-empty string or a list of them, got {value!r}",
                      param="stop")  # fmt: skip
    if len(stops) > MAX_STOP:
        raise invalid(f"stop takes at most {MAX_STOP} sequences, got {len(stops)}", param="stop")
    longest = max(len(s) for s in stops)
    if longest > MAX_STOP_CHARS:
        raise invalid(f"a stop sequence has at most {MAX_STOP_CHARS} characters, got {longest}",
                      param="stop")  # fmt: skip
    return tuple(stops)


def _extension(body: Mapping[str, Any], defaults: Defaults) -> tuple[str, WindowChoice | None]:
    """The ``edgespec`` object: ``slo_class`` and ``window`` (a name, or ``{name, params}``)."""
    ext = body.get("edgespec") or {}
    if not isinstance(ext, dict):
        raise invalid(f"edgespec must be an object, got {ext!r}", param="edgespec")
    unknown = sorted(set(ext) - {"slo_class", "window"})
    if unknown:
        raise invalid(f"edgespec has unknown fields {unknown} (known: slo_class, window)",
                      param="edgespec")  # fmt: skip
    slo = ext.get("slo_class", defaults.slo_class)
    if not isinstance(slo, str) or not slo:
        raise invalid(f"edgespec.slo_class must be a non-empty string, got {slo!r}",
                      param="edgespec.slo_class")  # fmt: skip
    if len(slo) > MAX_IDENTIFIER_CHARS:
        raise invalid(f"edgespec.slo_class is {len(slo)} characters; the limit is "
                      f"{MAX_IDENTIFIER_CHARS}", param="edgespec.slo_class")  # fmt: skip
    window = ext.get("window")
    if window is None:
        return slo, None
    if isinstance(window, str):
        return slo, WindowChoice(window)
    params = window.get("params", {}) if isinstance(window, dict) else None
    if (
        not isinstance(window, dict)
        or not isinstance(window.get("name"), str)
        or not isinstance(params, dict)
    ):
        raise invalid(f"edgespec.window must be a policy name or {{name, params}}, got "
                      f"{window!r}", param="edgespec.window")  # fmt: skip
    for key, value in params.items():  # a string could name a file on this machine (awc's)
        if not isinstance(value, int | float) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise invalid(f"edgespec.window.params.{key}: a request's window parameters are "
                          f"finite numbers or booleans, got {value!r}",
                          param="edgespec.window")  # fmt: skip
    return slo, WindowChoice(window["name"], params)


def _prompt(body: Mapping[str, Any], chat: bool) -> Any:
    if chat:
        messages = body.get("messages")
        if (
            not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages)
        ):
            raise invalid("messages must be a non-empty list of {role, content} objects",
                          param="messages")  # fmt: skip
        return tuple(messages)
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt)
    ):
        return tuple(prompt)
    raise invalid("prompt must be a string or a non-empty list of token ids (one prompt "
                  f"per request), got {type(prompt).__name__}", param="prompt")  # fmt: skip


def parse_request(
    body: Mapping[str, Any], chat: bool, defaults: Defaults, limits: Limits
) -> ParsedRequest:
    """``body`` checked; ``chat``: a ``/v1/chat/completions`` body (``messages``)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model is required (a string; see /v1/models)", param="model")
    for name, allowed in UNSUPPORTED.items():
        value = body.get(name)
        if value is not None and not any(type(value) is type(a) and value == a for a in allowed):
            only = ", ".join(map(repr, (None, *allowed)))
            raise invalid(f"{name}={value!r} is not supported (only {only})", param=name)
    max_tokens = _max_tokens(body, chat, defaults, limits)
    stream = body.get("stream", False)
    options = body.get("stream_options") or {}
    if not isinstance(stream, bool) or not isinstance(options, dict):
        raise invalid("stream must be a boolean and stream_options an object", param="stream")
    slo_class, window = _extension(body, defaults)
    return ParsedRequest(
        model=model,
        prompt=_prompt(body, chat),
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", defaults.temperature, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 1e-9, 1.0),
        seed=_seed(body),
        stop=_stop(body),
        stream=stream,
        include_usage=bool(options.get("include_usage", False)),
        slo_class=slo_class,
        window=window,
    )
