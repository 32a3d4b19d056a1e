"""Committed token ids to text deltas, holding back text that may begin a stop sequence
(and an unfinished character: :mod:`edgespec.runtime.detokenize`) so a stream never shows
what the full text would cut; and how many tokens the text returned took
(``usage.completion_tokens``)."""

from __future__ import annotations

from typing import Any

from edgespec.runtime.detokenize import IncrementalText
from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK


class TextStream:
    """The deltas joined are ``text`` once the output has ended (streamed or not, the
    same): complete characters, an unfinished last one as one U+FFFD, cut before the first
    stop sequence. A token in ``stop_token_ids`` (a chat template's end of turn) ends the
    text before it. ``num_tokens``: the tokens the text returned took (a token partly in it
    counts), not counting a stop sequence, an end-of-turn token or any token after them.
    ``min_tokens``: a stop sequence counts only where it ends in that many tokens' text or
    later (vLLM's; the server commits no stop token before then)."""

    def __init__(
        self,
        tokenizer: Any,
        stops: tuple[str, ...],
        stop_token_ids: frozenset[int] = frozenset(),
        min_tokens: int = 0,
    ) -> None:
        self._decoded = IncrementalText(tokenizer, TOKENIZER_LOCK)
        self._stops = stops
        self._min_tokens = min_tokens
        self._stop_ids = stop_token_ids
        self._emitted = 0
        self._searched = (0, 0)  # (the bound, the text's length) at the last search
        self.text = ""
        self.stopped = False
        self.num_tokens = 0

    def _held(self, text: str) -> int:
        """How many trailing characters may still become a stop sequence."""
        last = text[-1:]
        return max(
            (
                k
                for s in self._stops
                for k in range(1, len(s))
                if s[k - 1] == last and text.endswith(s[:k])
            ),
            default=0,
        )

    def push(self, tokens: tuple[int, ...]) -> str:
        """The new text ``tokens`` make safe to show; sets ``stopped`` at a stop sequence
        or an end-of-turn token."""
        ended = next((i for i, t in enumerate(tokens) if t in self._stop_ids), None)
        self._decoded.push(tokens if ended is None else tokens[:ended])
        if ended is None:
            return self._update(ended=False)
        self._decoded.finish()
        self.stopped = True
        return self._update(ended=True)

    def token_offsets(self, start: int, stop: int) -> list[int]:
        """Where the text of each token ``start`` .. ``stop - 1`` starts in the text."""
        return [self._decoded.num_chars_for(i) for i in range(start, stop)]

    def shown_tokens(self) -> int:
        """How many tokens the deltas so far showed (a token partly in them counts), at
        most those the text returns."""
        return min(self._decoded.num_tokens_for(self._emitted), self.num_tokens)

    def finish(self) -> str:
        """The text held back, once the output has ended without a stop sequence (an
        unfinished last character as one U+FFFD; a stop sequence in the text held cuts it
        and sets ``stopped``)."""
        self._decoded.finish()
        return self._update(ended=True)

    def _stops_after(self, full: str) -> int:
        """Where a stop sequence must end after (characters of ``full``): before the
        ``min_tokens``-th token's text, a stop sequence does not count."""
        if self._min_tokens == 0:
            return 0
        if self._decoded.num_tokens < self._min_tokens:
            return len(full)
        return self._decoded.num_chars_for(self._min_tokens - 1)

    def _update(self, ended: bool) -> str:
        full = self._decoded.text
        after = self._stops_after(full)
        if after != self._searched[0]:  # another bound: search from it again
            self._searched = (after, after)
        start = max(self._searched)  # a stop ending before it was searched for (the text grows)
        found = (full.find(s, max(start - len(s) + 1, 0)) for s in self._stops)
        hits = [i for i in found if i >= 0]
        if not hits:  # a stop found is found again on the next search
            self._searched = (after, len(full))
        self.text = full[: min(hits)] if hits else full
        if hits:
            self.stopped = True
            self.num_tokens = self._decoded.num_tokens_for(len(self.text))
        else:
            self.num_tokens = self._decoded.num_tokens
        safe = self.text if hits or ended else full[: len(full) - self._held(full)]
        delta = safe[self._emitted :]
        self._emitted = max(self._emitted, len(safe))
        return delta
