"""Log-probabilities on the endpoint (asked for as
:func:`~edgespec.runtime.openai_api.sampling_fields.parse_logprobs` reads a request): the
returned tokens' as OpenAI shapes them (:class:`ChoiceLogprobs`: ``tokens``,
``token_logprobs``, ``top_logprobs``, ``text_offset``, or chat's ``content`` list with each
token's UTF-8 ``bytes``), whole or a stream delta's worth at a time (:class:`LogprobTally`).
The values are the target's raw distribution's (the server's
:mod:`edgespec.runtime.server.committed_logprobs`); a token's text is its id decoded alone,
and its bytes (:func:`token_bytes`) the ones it stands for, so that a character split over
byte tokens, each decoded alone as U+FFFD, is rebuilt from them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.detokenize import token_bytes
from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK


def completions_token(text: str, raw: bytes) -> str:
    """A token as ``/v1/completions`` names it: its text, or where that is U+FFFD standing
    for part of a character, OpenAI's ``bytes:\\xNN…`` form of its bytes, so that the byte
    tokens among a row's alternatives stay apart as ``top_logprobs`` keys."""
    if "\ufffd" not in text or raw == text.encode("utf-8"):
        return text
    return "bytes:" + "".join(f"\\x{b:02x}" for b in raw)


def _first_per_key(pairs: Iterable[tuple[str, float]]) -> dict[str, float]:
    """``pairs`` as a dict, a key given twice keeping its first (likeliest) value."""
    out: dict[str, float] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


@dataclass(frozen=True, slots=True)
class ChoiceLogprobs:
    """The returned tokens' texts, log-probabilities, likeliest alternatives (text,
    log-probability) and where each token's text starts in the choice's text (an echoed
    prompt's first token has no log-probability nor alternatives: ``None``); ``token_bytes``
    and ``top_bytes``, what each token and alternative stands for (:func:`token_bytes`)."""

    tokens: tuple[str, ...]
    logprobs: tuple[float | None, ...]
    top: tuple[tuple[tuple[str, float], ...] | None, ...]
    offsets: tuple[int, ...]
    token_bytes: tuple[bytes, ...]
    top_bytes: tuple[tuple[bytes, ...], ...]

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
            raw = tuple(token_bytes(tokenizer, t, x) for t, x in zip(token_ids, texts, strict=True))
            raw_top = tuple(tuple(token_bytes(tokenizer, a, x) for (a, _), (x, _) in
                                  zip(t.top, alternatives, strict=True))
                            for t, alternatives in zip(logprobs, top, strict=True))  # fmt: skip
        return cls(texts, tuple(t.logprob for t in logprobs), top, tuple(offsets), raw, raw_top)

    def then(self, later: ChoiceLogprobs) -> ChoiceLogprobs:
        """These tokens' followed by ``later``'s."""
        return ChoiceLogprobs(self.tokens + later.tokens, self.logprobs + later.logprobs,
                              self.top + later.top, self.offsets + later.offsets,
                              self.token_bytes + later.token_bytes,
                              self.top_bytes + later.top_bytes)  # fmt: skip

    def completions_json(self) -> dict[str, Any]:
        """``/v1/completions``' ``logprobs`` object."""
        tops = [None if top is None else _first_per_key(
                    (completions_token(text, raw), lp)
                    for (text, lp), raw in zip(top, top_raw, strict=True))
                for top, top_raw in zip(self.top, self.top_bytes, strict=True)]  # fmt: skip
        tokens = zip(self.tokens, self.token_bytes, strict=True)
        return {
            "tokens": [completions_token(text, raw) for text, raw in tokens],
            "token_logprobs": list(self.logprobs),
            "top_logprobs": tops,
            "text_offset": list(self.offsets),
        }

    def chat_json(self) -> dict[str, Any]:
        """Chat's ``logprobs`` object: ``content``, a list with one entry per token."""

        def entry(text: str, logprob: float | None, raw: bytes) -> dict[str, Any]:
            return {"token": text, "logprob": logprob, "bytes": list(raw)}

        return {"content": [
            entry(text, lp, raw) | {"top_logprobs": [
                entry(a, alp, a_raw) for (a, alp), a_raw in zip(top or (), top_raw, strict=True)]}
            for text, lp, top, raw, top_raw in zip(self.tokens, self.logprobs, self.top,
                                                   self.token_bytes, self.top_bytes, strict=True)
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
