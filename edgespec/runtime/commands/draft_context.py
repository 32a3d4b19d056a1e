"""``edgespec draft``'s prompt and ``max_new_tokens`` against the target's context and
vocabulary (the server's Health says them): refused in one line naming the flag (the
context in :func:`~edgespec.errors.check_fits_context`'s one wording), exit 2, as soon as
each is known, before the draft loads where it can (the server's OpenSession refusal came
only after it had loaded, exit 1): ``--prompt-ids`` before anything loads, a ``--prompt``
that tokenizes to nothing once tokenized."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from edgespec.errors import UserInputError, check_fits_context


@dataclass(frozen=True, slots=True)
class ContextBudget:
    """The target's ``context`` (``None``: a server that does not say, an older one; its
    OpenSession still refuses) and the run's ``max_new_tokens``, called ``name``: the flag
    when it was given, else the config's field (``--config``, ``--set`` or the default);
    the target's ``vocab_size`` (the server's Health)."""

    context: int | None
    max_new_tokens: int
    name: str
    vocab_size: int

    @classmethod
    def of(
        cls, args: argparse.Namespace, max_new_tokens: int, context: int | None, vocab_size: int
    ) -> ContextBudget:
        """``max_new_tokens`` (the config's, flags applied) named by where it came from."""
        name = "--max-new-tokens" if args.max_new_tokens is not None else "max_new_tokens"
        return cls(context, max_new_tokens, name, vocab_size)

    def checked_ids(self, prompt_ids: tuple[int, ...] | None) -> tuple[int, ...] | None:
        """``--prompt-ids`` checked against the vocabulary and with ``max_new_tokens``;
        without them (a text prompt, not yet tokenized) ``max_new_tokens`` that not even the
        shortest prompt, 1 token, fits beside."""
        if prompt_ids is not None:
            bad = next((i for i, tok in enumerate(prompt_ids) if tok >= self.vocab_size), None)
            if bad is not None:
                raise UserInputError(f"--prompt-ids: token {bad} (id {prompt_ids[bad]}) is outside "
                                     f"the target's vocabulary [0, {self.vocab_size})")  # fmt: skip
            self.check_prompt("--prompt-ids", len(prompt_ids))
        elif self.context is not None:
            check_fits_context(self.name, self.max_new_tokens, "the shortest prompt", 1,
                               self.context)  # fmt: skip
        return prompt_ids

    def check_prompt(self, what: str, num_tokens: int) -> None:
        """A prompt of ``num_tokens`` (``what``: its flag) with ``max_new_tokens``."""
        if self.context is not None:
            check_fits_context(what, num_tokens, self.name, self.max_new_tokens, self.context)

    def tokenized(self, tokenizer: Any, text: str) -> tuple[int, ...]:
        """``--prompt``'s token ids, checked with ``max_new_tokens``; none is refused."""
        ids = tuple(tokenizer(text)["input_ids"])
        if not ids:
            raise UserInputError(f"--prompt: {text!r} tokenizes to no tokens: give a prompt of "
                                 "at least one token")  # fmt: skip
        self.check_prompt("--prompt", len(ids))
        return ids
