"""Response bodies in the OpenAI shapes: a whole completion, the chunks of a stream, the
model list."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from edgespec.runtime.openai_api.generation import Completion


@dataclass(frozen=True, slots=True)
class Shape:
    """The bodies of one request: ``chat`` (``chat.completion``) or ``text_completion``;
    ``include_usage`` (``stream_options``): its stream ends with a usage chunk, and every
    chunk before it says ``"usage": null``, as OpenAI's do."""

    model: str
    chat: bool
    id: str
    created: int
    include_usage: bool = False

    @classmethod
    def new(cls, model: str, chat: bool, include_usage: bool = False) -> Shape:
        prefix = "chatcmpl" if chat else "cmpl"
        return cls(model, chat, f"{prefix}-{uuid.uuid4().hex}", int(time.time()), include_usage)

    def _head(self, object_name: str) -> dict[str, Any]:
        return {"id": self.id, "object": object_name, "created": self.created,
                "model": self.model}  # fmt: skip

    def _choice(
        self, text: str, finish: str | None, stream: bool, first: bool = False
    ) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish}
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

    def whole(self, done: Completion) -> dict[str, Any]:
        """The body of a request without ``stream``."""
        body = self._head("chat.completion" if self.chat else "text_completion")
        body["choices"] = [self._choice(done.text, done.finish_reason, stream=False)]
        body["usage"] = usage(done)
        return body

    def chunk(self, text: str, finish: str | None = None, first: bool = False) -> dict[str, Any]:
        """One streamed chunk: a text delta, or (``finish``) the last choice; a chat's
        ``first`` chunk carries the role; with ``include_usage``, ``"usage": null``."""
        body = self._head("chat.completion.chunk" if self.chat else "text_completion")
        body["choices"] = [self._choice(text, finish, stream=True, first=first)]
        if self.include_usage:
            body["usage"] = None
        return body

    def usage_chunk(self, done: Completion) -> dict[str, Any]:
        """``stream_options.include_usage``: the chunk after the last, with no choices."""
        body = self._head("chat.completion.chunk" if self.chat else "text_completion")
        body["choices"] = []
        body["usage"] = usage(done)
        return body


def usage(done: Completion) -> dict[str, int]:
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
