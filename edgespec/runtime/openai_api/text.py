"""Committed token ids to text deltas, holding back text that may begin a stop sequence
(or an incomplete character) so a stream never shows what the full text would cut; and
how many tokens the text returned took (``usage.completion_tokens``)."""

from __future__ import annotations

from typing import Any

from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK


class TextStream:
    """Decodes the whole output so far on every push (outputs are short; a tokenizer's
    merges across chunk boundaries then come out as they would at once). A token in
    ``stop_token_ids`` (a chat template's end of turn) ends the text before it.
    ``num_tokens``: the tokens the text returned took, not counting a stop sequence, an
    end-of-turn token or any token committed after them."""

    def __init__(
        self, tokenizer: Any, stops: tuple[str, ...], stop_token_ids: frozenset[int] = frozenset()
    ) -> None:
        self._tokenizer = tokenizer
        self._stops = stops
        self._stop_ids = stop_token_ids
        self._tokens: list[int] = []
        self._emitted = 0
        self.text = ""
        self.stopped = False
        self.num_tokens = 0

    def _decode(self, tokens: list[int]) -> str:
        with TOKENIZER_LOCK:
            return str(self._tokenizer.decode(tokens, skip_special_tokens=True))

    def _tokens_for(self, chars: int) -> int:
        """The fewest leading tokens whose text reaches ``chars`` characters (a token cut
        by a stop sequence counts: part of its text is returned)."""
        low, high = 0, len(self._tokens)
        while low < high:
            middle = (low + high) // 2
            if len(self._decode(self._tokens[:middle])) >= chars:
                high = middle
            else:
                low = middle + 1
        return low

    def _held(self, text: str) -> int:
        """How many trailing characters may still become a stop sequence (or a character)."""
        if text.endswith("\ufffd"):
            return len(text) - len(text.rstrip("\ufffd"))
        return max(
            (k for s in self._stops for k in range(1, len(s)) if text.endswith(s[:k])),
            default=0,
        )

    def push(self, tokens: tuple[int, ...]) -> str:
        """The new text ``tokens`` make safe to show; sets ``stopped`` at a stop sequence."""
        ended = next((i for i, t in enumerate(tokens) if t in self._stop_ids), None)
        self._tokens.extend(tokens if ended is None else tokens[:ended])
        full = self._decode(self._tokens)
        hits = [i for i in (full.find(s) for s in self._stops) if i >= 0]
        if ended is not None and not hits:
            hits = [len(full)]
        if hits:
            self.stopped = True
            self.text = full[: min(hits)]
            safe = self.text
            cut = len(self.text) < len(full)
            self.num_tokens = self._tokens_for(len(self.text)) if cut else len(self._tokens)
        else:
            self.text = full
            self.num_tokens = len(self._tokens)
            safe = full[: len(full) - self._held(full)]
        delta = safe[self._emitted :]
        self._emitted = max(self._emitted, len(safe))
        return delta

    def finish(self) -> str:
        """The text held back, once the output has ended without a stop sequence."""
        delta = self.text[self._emitted :]
        self._emitted = len(self.text)
        return delta
