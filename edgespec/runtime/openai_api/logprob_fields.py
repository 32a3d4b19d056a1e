"""Log-probabilities on the endpoint (asked for as
:func:`~edgespec.runtime.openai_api.sampling_fields.parse_logprobs` reads a request): the
returned tokens' as OpenAI shapes them (:class:`ChoiceLogprobs`: ``tokens``,
``token_logprobs``, ``top_logprobs``, ``text_offset``, or chat's ``content`` list with each
token's UTF-8 ``bytes``). The values are the target's raw
distribution's (the server's :mod:`edgespec.runtime.server.committed_logprobs`); a token's
text is its id decoded alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK


@dataclass(frozen=True, slots=True)
class ChoiceLogprobs:
    """The returned tokens' texts, log-probabilities, likeliest alternatives (text,
    log-probability) and where each token's text starts in the choice's text."""

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]
    top: tuple[tuple[tuple[str, float], ...], ...]
    offsets: tuple[int, ...]

    @classmethod
    def build(
        cls,
        tokenizer: Any,
        token_ids: Sequence[int],
        logprobs: Sequence[TokenLogprobs],
        offsets: Sequence[int],
    ) -> ChoiceLogprobs:
        """From the returned ``token_ids`` and their ``logprobs`` (one each)."""
        with TOKENIZER_LOCK:
            texts = tuple(str(tokenizer.decode([t])) for t in token_ids)
            top = tuple(tuple((str(tokenizer.decode([a])), lp) for a, lp in t.top)
                        for t in logprobs)  # fmt: skip
        return cls(texts, tuple(t.logprob for t in logprobs), top, tuple(offsets))

    def completions_json(self) -> dict[str, Any]:
        """``/v1/completions``' ``logprobs`` object."""
        return {
            "tokens": list(self.tokens),
            "token_logprobs": list(self.logprobs),
            "top_logprobs": [dict(alternatives) for alternatives in self.top],
            "text_offset": list(self.offsets),
        }

    def chat_json(self) -> dict[str, Any]:
        """Chat's ``logprobs`` object: ``content``, a list with one entry per token."""

        def entry(text: str, logprob: float) -> dict[str, Any]:
            return {"token": text, "logprob": logprob,
                    "bytes": list(text.encode("utf-8", errors="replace"))}  # fmt: skip

        return {"content": [
            entry(text, lp) | {"top_logprobs": [entry(a, alp) for a, alp in top]}
            for text, lp, top in zip(self.tokens, self.logprobs, self.top, strict=True)
        ]}  # fmt: skip
