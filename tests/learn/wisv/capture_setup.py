"""What the WISV capture tests share: the prompt, no EOS token, and a toy outcome whose
answer is the last token."""

from __future__ import annotations

from collections.abc import Sequence

PROMPT = tuple(range(5, 17))
NO_EOS: frozenset[int] = frozenset()


class LastToken:
    """A toy outcome: never final early; the answer is the last token modulo 4."""

    def finished(self, output_ids: Sequence[int]) -> bool:
        return False

    def answer(self, output_ids: Sequence[int]) -> str | None:
        return str(output_ids[-1] % 4)
