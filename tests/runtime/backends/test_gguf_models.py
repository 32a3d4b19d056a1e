"""GGUF models on both backends (:mod:`edgespec.models.gguf_file`). The stop rule: a GGUF
model ends a generation on the same ids whichever backend serves it, the ids its metadata
declares: a declared end-of-turn token on both (transformers took the EOS alone), a token
merely spelled like one on neither (llama.cpp guessed it from its text). And a GGUF file is
one by its magic bytes, whatever its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.backends.llamacpp_fixtures import (
    EOS,
    SKIP_REASON,
    VOCAB,
    write_tiny_llama_gguf,
)

pytest.importorskip("llama_cpp", reason=SKIP_REASON)
pytest.importorskip("gguf", reason="the tiny test model is written with the gguf package")

from edgespec.models.loading import load_model
from edgespec.models.registry import model_file
from edgespec.runtime.backends.llamacpp_context import LlamaContext, LlamaCppSettings
from edgespec.runtime.backends.transformers_backend import TransformersTarget

END_OF_TURN = 5


@pytest.mark.parametrize(
    ("declared_eot", "stops"),
    [(END_OF_TURN, {EOS, END_OF_TURN}), (None, {EOS})],
    ids=["eot-declared", "eot-spelled-only"],
)
def test_both_backends_stop_on_the_ids_the_gguf_declares(
    tmp_path: Path, declared_eot: int | None, stops: set[int]
) -> None:
    path = write_tiny_llama_gguf(
        tmp_path / "m.gguf",
        eot_token_id=declared_eot,
        control_tokens={END_OF_TURN: b"<end_of_turn>"},
    )
    context = LlamaContext(LlamaCppSettings(model_path=path, sequences=1, context_tokens=64))
    transformers = TransformersTarget(load_model(str(path)).model, numerics="lossy")
    assert context.eos_token_ids == stops
    assert transformers.eos_token_ids == stops


def test_a_gguf_named_otherwise_loads_on_both_backends(tmp_path: Path) -> None:
    """Once said not to exist ("model path ... does not exist"); the name is no part of the
    format."""
    path = write_tiny_llama_gguf(tmp_path / "tinygguf.bin")
    assert model_file(str(path)) == path
    context = LlamaContext(LlamaCppSettings(model_path=path, sequences=1, context_tokens=64))
    loaded = load_model(str(path))
    assert (context.vocab_size, loaded.model.config.vocab_size) == (VOCAB, VOCAB)
    assert loaded.weight_files == (path,)
