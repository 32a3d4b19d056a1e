"""Response bodies in the OpenAI shapes: a whole completion, the chunks of a stream, the
model list."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from edgespec.runtime.openai_api.choices import Choices
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs


@dataclass(frozen=True, slots=True)
class Shape:
    """The bodies of one request: ``chat`` (``chat.completion``) or ``text_completion``;
    ``include_usage`` (``stream_options``): its stream ends with a usage chunk, and every
    chunk before it says ``"usage": null``, as OpenAI's do; ``num_choices``: its ``n``."""

    model: str
    chat: bool
    id: str
    created: int
    include_usage: bool = False
    num_choices: int = 1

    @classmethod
    def new(cls, model: str, chat: bool, include_usage: bool = False, n: int = 1) -> Shape:
        prefix = "chatcmpl" if chat else "cmpl"
        return cls(model, chat, f"{prefix}-{uuid.uuid4().hex}", int(time.time()), include_usage,
                   n)  # fmt: skip

    def _head(self, object_name: str) -> dict[str, Any]:
        return {"id": self.id, "object": object_name, "created": self.created,
                "model": self.model}  # fmt: skip

    def _choice(
        self, text: str, finish: str | None, stream: bool, first: bool = False, index: int = 0
    ) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": index, "logprobs": None, "finish_reason": finish}
        if not self.chat:
            choice["text"] = text
        elif stream:
            # as OpenAI streams: the role once, in the first delta; then content only
            delta: dict[str, Any] = {"role": "assistant", "content": text} if first else {}
            if text and not first:
                delta["content"] = text
            choice["delta"] = delta
        else:
            choice["message"] = {"role": "assistant", "content": text}
        return choice

    def whole(self, done: Choices) -> dict[str, Any]:
        """The body of a request without ``stream``."""
        body = self._head("chat.completion" if self.chat else "text_completion")
        body["choices"] = [self._choice(c.text, c.finish_reason, stream=False, index=i)
                           for i, c in enumerate(done.completions)]  # fmt: skip
        for choice, c in zip(body["choices"], done.completions, strict=True):
            choice["logprobs"] = self._logprobs(c.logprobs)
        body["usage"] = usage(done)
        return body

    def _logprobs(self, logprobs: ChoiceLogprobs | None) -> dict[str, Any] | None:
        if logprobs is None:
            return None
        return logprobs.chat_json() if self.chat else logprobs.completions_json()

    def chunk(
        self,
        text: str,
        finish: str | None = None,
        first: bool = False,
        index: int = 0,
        logprobs: ChoiceLogprobs | None = None,
    ) -> dict[str, Any]:
        """One streamed chunk of choice ``index``: a text delta (with the log-probabilities
        of the tokens it shows), or (``finish``) its last; a chat choice's ``first`` chunk
        carries the role; with ``include_usage``, ``"usage": null``."""
        body = self._head("chat.completion.chunk" if self.chat else "text_completion")
        body["choices"] = [self._choice(text, finish, stream=True, first=first, index=index)]
        body["choices"][0]["logprobs"] = self._logprobs(logprobs)
        if self.include_usage:
            body["usage"] = None
        return body

    def usage_chunk(self, done: Choices) -> dict[str, Any]:
        """``stream_options.include_usage``: the chunk after the last, with no choices."""
        body = self._head("chat.completion.chunk" if self.chat else "text_completion")
        body["choices"] = []
        body["usage"] = usage(done)
        return body


def usage(done: Choices) -> dict[str, int]:
    """Prompt tokens once, completion tokens of every choice."""
    return {
        "prompt_tokens": done.prompt_tokens,
        "completion_tokens": done.completion_tokens,
        "total_tokens": done.prompt_tokens + done.completion_tokens,
    }


def model_entry(model_id: str, created: int) -> dict[str, Any]:
    """``/v1/models/{model_id}``: the model served (the verification server's target)."""
    return {"id": model_id, "object": "model", "created": created, "owned_by": "edgespec"}


def model_list(model_id: str, created: int) -> dict[str, Any]:
    """``/v1/models``: the one model served."""
    return {"object": "list", "data": [model_entry(model_id, created)]}
