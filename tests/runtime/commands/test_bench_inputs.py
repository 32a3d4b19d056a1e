"""The runtime benchmark's inputs: its models (synthetic, or loaded by name: ``load_model``
replaced by a recorder) and its prompts (random, or text prompts cut and cycled)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.models import loading
from edgespec.runtime.backends import transformers_draft
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.commands.bench_inputs import load_models, load_text_prompts, make_prompts


def _args(target: str = "synthetic", draft: str = "truncated") -> argparse.Namespace:
    return argparse.Namespace(
        target=target, draft=draft, synthetic_layers=3, synthetic_hidden=32, verbose=False
    )


def test_synthetic_target_with_its_truncated_draft() -> None:
    target, make_draft, desc, tokenizer = load_models(_args())
    assert desc == (
        "synthetic Llama target (3 layers, hidden 32, vocab 4096; layers >= 2 quiet), "
        "draft truncated"
    )
    assert tokenizer is None
    assert (target.config.num_hidden_layers, target.config.hidden_size) == (3, 32)
    assert target.config.vocab_size == 4096
    draft = make_draft()
    assert type(draft) is TransformersDraft
    assert draft._model.config.num_hidden_layers == 2  # the target's first 2 layers
    assert draft._model.config.hidden_size == 32


@pytest.mark.parametrize("draft", ["ngram", "org/draft"])
def test_synthetic_target_with_an_ngram_draft(loads: list[str], draft: str) -> None:
    _, make_draft, desc, tokenizer = load_models(_args(draft=draft))
    assert desc.endswith("layers >= 2 quiet), n-gram draft")
    assert make_draft is NgramDrafter and tokenizer is None
    assert loads == []  # a synthetic target drafts with its own truncation or n-grams


class Loaded:
    def __init__(self, name: str) -> None:
        self.model = f"model:{name}"
        self.tokenizer = f"tokenizer:{name}"


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []

    def load_model(name: str, *args: Any, **kwargs: Any) -> Loaded:
        names.append(name)
        return Loaded(name)

    monkeypatch.setattr(loading, "load_model", load_model)
    return names


@pytest.mark.parametrize("draft", ["ngram", "truncated"])
def test_a_named_target_with_an_ngram_draft(loads: list[str], draft: str) -> None:
    target, make_draft, desc, tokenizer = load_models(_args("org/target", draft))
    assert loads == ["org/target"]  # 'truncated' is synthetic only: an n-gram draft here
    assert (target, tokenizer) == ("model:org/target", "tokenizer:org/target")
    assert desc == "target org/target, n-gram draft"
    assert make_draft is NgramDrafter


def test_a_named_target_and_draft(loads: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    monkeypatch.setattr(transformers_draft, "TransformersDraft", made.append)
    _, make_draft, desc, _ = load_models(_args("org/target", "org/draft"))
    assert loads == ["org/target", "org/draft"]
    assert desc == "target org/target, draft org/draft"
    make_draft()
    assert made == ["model:org/draft"]


def test_random_prompts_are_fixed_and_cover_the_vocabulary() -> None:
    prompts = make_prompts(3, 64, 2)
    assert len(prompts) == 3 and all(len(p) == 64 for p in prompts)
    assert {t for p in prompts for t in p} == {0, 1}
    assert make_prompts(3, 64, 2) == prompts  # the same on every run
    assert make_prompts(2, 5, 1000) == [(979, 976, 987, 380, 171), (923, 104, 261, 138, 319)]
    assert all(type(t) is int for t in prompts[0])


def test_text_prompts_cycle_and_keep_their_last_tokens() -> None:
    texts = ((1, 2, 3, 4), (5, 6), (7,))
    assert make_prompts(5, 2, 100, texts) == [(3, 4), (5, 6), (7,), (3, 4), (5, 6)]
    assert make_prompts(1, 10, 100, texts) == [(1, 2, 3, 4)]


def _tokenize(text: str) -> dict[str, list[int]]:
    return {"input_ids": [ord(c) for c in text]}


def test_text_prompts_are_read_tokenized_and_limited(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": p, "id": i}) + "\n" for i, p in enumerate("abcd"))
    )
    assert load_text_prompts(str(path), _tokenize) == ((97,), (98,), (99,), (100,))
    assert load_text_prompts(str(path), _tokenize, limit=3) == ((97,), (98,), (99,))
    assert load_text_prompts(str(path), _tokenize, limit=1) == ((97,),)


def test_text_prompts_need_a_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        load_text_prompts(str(tmp_path / "never-read.jsonl"), None)
    assert info.value.code == "--prompts needs a target with a tokenizer"
