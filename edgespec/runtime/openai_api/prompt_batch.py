"""``/v1/completions``' batched prompts, as OpenAI's legacy completions take them:
``prompt`` a list of strings or of token-id lists (lm-evaluation-harness's
``local-completions`` always sends one, a single prompt as a list of one). Each prompt
is parsed, tokenized and checked as a request of its own would be, an error naming its
place (``prompt[i]: ...``); the length of the list is checked before any of it is read:
at most :data:`~.messages.MAX_PROMPTS`, their choices (with ``n``) at most
:data:`~.sampling_fields.MAX_CHOICES` together, each a whole generation's work.
The prompts are generated in turn in the request's worker, their ``n`` choices each;
choice ``j`` of prompt ``i`` is returned at index ``i * n + j`` (as vLLM numbers them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from edgespec.runtime.openai_api.errors import ApiError, invalid
from edgespec.runtime.openai_api.messages import MAX_PROMPTS, Prompt, parse_prompt
from edgespec.runtime.openai_api.sampling_fields import MAX_CHOICES
from edgespec.runtime.openai_api.schema import Defaults, Limits, ParsedRequest, parse_request

T = TypeVar("T")


def is_batch(body: Mapping[str, Any], chat: bool) -> bool:
    """Whether ``body``'s ``prompt`` is a list of prompts (a list of token ids is one)."""
    prompt = body.get("prompt")
    return (
        not chat and isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], str | list)
    )


def of_prompt(index: int, exc: ApiError) -> ApiError:
    """``exc`` said of ``prompt[index]`` when it is about the prompt."""
    if exc.param != "prompt":
        return exc
    return ApiError(exc.status, f"prompt[{index}]: {exc.message}", exc.kind, exc.param,
                    exc.code, exc.retry_after_s)  # fmt: skip


def at_prompt(index: int, call: Callable[[], T]) -> T:
    """``call()``, an error it raises about the prompt said of ``prompt[index]``."""
    try:
        return call()
    except ApiError as exc:
        raise of_prompt(index, exc) from None


def parse_requests(
    body: Mapping[str, Any], chat: bool, defaults: Defaults, limits: Limits
) -> tuple[ParsedRequest, ...]:
    """``body`` checked (:func:`~.schema.parse_request`) as one request per prompt."""
    if not is_batch(body, chat):
        return (parse_request(body, chat, defaults, limits),)
    prompts: list[Any] = body["prompt"]
    if len(prompts) > MAX_PROMPTS:
        raise invalid(f"prompt is a list of {len(prompts)} prompts, over the limit of "
                      f"{MAX_PROMPTS}: send fewer per request", param="prompt")  # fmt: skip
    first = at_prompt(0, lambda: parse_request({**body, "prompt": prompts[0]}, chat, defaults,
                                               limits))  # fmt: skip
    if len(prompts) * first.n > MAX_CHOICES:
        raise invalid(f"{len(prompts)} prompts with n {first.n} are {len(prompts) * first.n} "
                      f"choices, over the limit of {MAX_CHOICES}", param="n")  # fmt: skip

    def one(p: Any) -> Prompt:
        return parse_prompt({"prompt": p}, chat, limits.max_prompt_tokens, limits.chars_per_token)

    rest = [at_prompt(i, partial(one, p)) for i, p in enumerate(prompts[1:], start=1)]
    return (first, *(dataclasses.replace(first, prompt=p) for p in rest))
