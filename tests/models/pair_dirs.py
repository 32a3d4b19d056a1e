"""Tiny models saved as local directories for the commands that load a draft/target pair
by path: a target with a tokenizer, its trimmed draft, and drafts of other vocabularies."""

from __future__ import annotations

import json
from pathlib import Path

from edgespec.runtime.testing import tiny_llama
from tests.learn.traces.test_command import tiny_tokenizer
from tests.models.tiny import VOCAB, tiny_draft, tiny_target


def save_pair_models(root: Path) -> Path:
    """A folder with ``target`` (vocabulary 48, a tokenizer), ``draft`` (its trimmed draft),
    ``wide`` (96 ids) and ``narrow`` (32 ids), and ``p.jsonl``, two prompts."""
    tiny_target().save_pretrained(root / "target")
    tiny_tokenizer().save_pretrained(root / "target")
    tiny_draft(list(range(0, VOCAB, 2))).save(root / "draft")
    tiny_llama(seed=3, num_layers=1, vocab_size=2 * VOCAB).save_pretrained(root / "wide")
    tiny_llama(seed=3, num_layers=1, vocab_size=32).save_pretrained(root / "narrow")
    prompts = [{"prompt": f"w5 w{9 + i} w7 w5"} for i in range(2)]
    (root / "p.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    return root


PAIR_VOCAB_REFUSALS = [
    ("wide", "--draft wide has a vocabulary of 96 tokens, the target 48: it would draft ids "
     "the target does not have (share the target's tokenizer)"),
    ("narrow", "--draft narrow has a vocabulary of 32 tokens, the server's target 48: the "
     "draft must take every target token id (share the target's tokenizer)"),
]  # fmt: skip
"""(draft folder, the one-line refusal) for the pair commands given ``wide`` or ``narrow``."""
