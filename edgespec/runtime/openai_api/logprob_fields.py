"""Log-probabilities on the endpoint (asked for as
:func:`~edgespec.runtime.openai_api.sampling_fields.parse_logprobs` reads a request): the
returned tokens' as OpenAI shapes them (:class:`ChoiceLogprobs`: ``tokens``,
``token_logprobs``, ``top_logprobs``, ``text_offset``, or chat's ``content`` list with each
token's UTF-8 ``bytes``), whole or a stream delta's worth at a time (:class:`LogprobTally`).
The values are the target's raw distribution's (the server's
:mod:`edgespec.runtime.server.committed_logprobs`); a token's text is its id decoded alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK


@dataclass(frozen=True, slots=True)
class ChoiceLogprobs:
    """The returned tokens' texts, log-probabilities, likeliest alternatives (text,
    log-probability) and where each token's text starts in the choice's text (an echoed
    prompt's first token has no log-probability nor alternatives: ``None``)."""

    tokens: tuple[str, ...]
    logprobs: tuple[float | None, ...]
    top: tuple[tuple[tuple[str, float], ...] | None, ...]
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
        if len(logprobs) != len(token_ids):
            raise RuntimeError(f"the server returned log-probabilities of {len(logprobs)} of "
                               f"{len(token_ids)} tokens")  # fmt: skip
        with TOKENIZER_LOCK:
            texts = tuple(str(tokenizer.decode([t])) for t in token_ids)
            top = tuple(tuple((str(tokenizer.decode([a])), lp) for a, lp in t.top)
                        for t in logprobs)  # fmt: skip
        return cls(texts, tuple(t.logprob for t in logprobs), top, tuple(offsets))

    def then(self, later: ChoiceLogprobs) -> ChoiceLogprobs:
        """These tokens' followed by ``later``'s."""
        return ChoiceLogprobs(self.tokens + later.tokens, self.logprobs + later.logprobs,
                              self.top + later.top, self.offsets + later.offsets)  # fmt: skip

    def completions_json(self) -> dict[str, Any]:
        """``/v1/completions``' ``logprobs`` object."""
        return {
            "tokens": list(self.tokens),
            "token_logprobs": list(self.logprobs),
            "top_logprobs": [None if top is None else dict(top) for top in self.top],
            "text_offset": list(self.offsets),
        }

    def chat_json(self) -> dict[str, Any]:
        """Chat's ``logprobs`` object: ``content``, a list with one entry per token."""

        def entry(text: str, logprob: float | None) -> dict[str, Any]:
            return {"token": text, "logprob": logprob,
                    "bytes": list(text.encode("utf-8", errors="replace"))}  # fmt: skip

        return {"content": [
            entry(text, lp) | {"top_logprobs": [entry(a, alp) for a, alp in top or ()]}
            for text, lp, top in zip(self.tokens, self.logprobs, self.top, strict=True)
        ]}  # fmt: skip


class LogprobTally:
    """A choice's tokens' log-probabilities (``values``: one per committed token, extended as
    each round arrives, before its tokens), handed out with the text that shows them:
    :meth:`upto` those not yet handed out, :meth:`whole` all of the returned text's.
    ``offsets(start, stop)``: where tokens start .. stop - 1 begin in the text."""

    def __init__(
        self, tokenizer: Any, committed: list[int], offsets: Callable[[int, int], list[int]]
    ) -> None:
        self.values: list[TokenLogprobs] = []
        self._tokenizer, self._committed, self._offsets = tokenizer, committed, offsets
        self._given = 0

    def _between(self, start: int, stop: int) -> ChoiceLogprobs:
        tokens, values = self._committed[start:stop], self.values[start:stop]
        return ChoiceLogprobs.build(self._tokenizer, tokens, values, self._offsets(start, stop))

    def upto(self, num_tokens: int) -> ChoiceLogprobs | None:
        """The first ``num_tokens`` tokens' not handed out yet (``None``: none)."""
        start, self._given = self._given, max(self._given, num_tokens)
        return self._between(start, self._given) if self._given > start else None

    def whole(self, num_tokens: int) -> ChoiceLogprobs:
        """The first ``num_tokens`` tokens' (the returned text's)."""
        return self._between(0, num_tokens)
