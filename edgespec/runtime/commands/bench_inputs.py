"""The runtime benchmark's inputs (:mod:`edgespec.runtime.commands.bench`): its target and draft
models, synthetic or loaded by name, and its prompts, random or read from a JSONL file."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def load_models(args: argparse.Namespace) -> tuple[Any, Callable[[], Any], str, Any]:
    """(target model, draft backend factory, description, tokenizer or ``None``)."""
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.backends.transformers_draft import TransformersDraft

    if args.target == "synthetic":
        from edgespec.runtime.testing import layer_truncated_copy, tiny_llama

        target = tiny_llama(
            0,
            num_layers=args.synthetic_layers,
            vocab_size=4096,
            hidden_size=args.synthetic_hidden,
            logit_scale=5.0,
            quiet_layers_from=2,
            quiet_scale=0.03,
        )
        draft = layer_truncated_copy(target, 2) if args.draft == "truncated" else None
        desc = (
            f"synthetic Llama target ({args.synthetic_layers} layers, hidden "
            f"{args.synthetic_hidden}, vocab 4096; layers >= 2 quiet)"
        )
        tokenizer = None
    else:
        from edgespec.models.loading import load_model

        loaded = load_model(args.target, verbose=args.verbose)
        target, tokenizer = loaded.model, loaded.tokenizer
        draft = None
        if args.draft not in ("ngram", "truncated"):
            draft = load_model(args.draft, verbose=args.verbose).model
        desc = f"target {args.target}"
    if draft is None:
        return target, NgramDrafter, desc + ", n-gram draft", tokenizer
    return target, lambda: TransformersDraft(draft), desc + f", draft {args.draft}", tokenizer


def make_prompts(
    n: int, length: int, vocab: int, texts: Sequence[tuple[int, ...]] = ()
) -> list[tuple[int, ...]]:
    """n prompts: ``texts`` (from --prompts, :func:`load_text_prompts`) in turn, cut to
    ``length`` tokens; random ones when there are none."""
    if texts:
        return [texts[i % len(texts)][-length:] for i in range(n)]
    rng = np.random.default_rng(1234)
    return [tuple(int(t) for t in rng.integers(0, vocab, length)) for _ in range(n)]


def load_text_prompts(path: str, tokenizer: Any, limit: int = 32) -> tuple[tuple[int, ...], ...]:
    """The first ``limit`` prompts of the JSONL file ``path``, tokenized."""
    import json

    if tokenizer is None:
        raise SystemExit("--prompts needs a target with a tokenizer")
    with open(path) as f:
        return tuple(
            tuple(tokenizer(json.loads(line)["prompt"])["input_ids"]) for line in list(f)[:limit]
        )
