"""The load's prompts: a bundled prompt set (``edgespec.datasets.prompts``) as token ids —
through the target's tokenizer when it has one, else byte by byte (each UTF-8 byte its own
token id, for the synthetic targets, whose vocabulary is at least 256) — cut to
``max_prompt_tokens`` (the last tokens are kept: a template's cue ends the prompt)."""

from __future__ import annotations

from typing import Any

from edgespec.errors import UserInputError

BYTE_VOCAB = 256


def prompt_texts(dataset: str, limit: int = 256) -> tuple[str, ...]:
    """Up to ``limit`` prompts of ``dataset``'s test split: read before any server starts,
    so that a set that cannot be read (a missing file, a missing package) is refused
    first."""
    from edgespec.datasets.prompts import load_prompts

    try:
        prompts = load_prompts(dataset, "test", limit)
    except (ValueError, OSError) as exc:
        raise UserInputError(f"--prompts {dataset}: {exc}") from None
    if not prompts:
        raise UserInputError(f"--prompts {dataset}: the test split holds no prompt")
    return tuple(p.text for p in prompts)


def prompt_token_ids(
    texts: tuple[str, ...], tokenizer: Any, vocab_size: int, max_prompt_tokens: int
) -> tuple[tuple[int, ...], ...]:
    """``texts`` (:func:`prompt_texts`) as token ids."""
    if tokenizer is None and vocab_size < BYTE_VOCAB:
        raise UserInputError(
            f"a target without a tokenizer takes byte-level prompts, which need a vocabulary "
            f"of at least {BYTE_VOCAB} tokens; this one has {vocab_size}"
        )
    out = []
    for text in texts:
        if tokenizer is None:
            ids = tuple(text.encode())
        else:
            ids = tuple(int(t) for t in tokenizer(text)["input_ids"])
        out.append(ids[-max_prompt_tokens:])
    return tuple(out)
