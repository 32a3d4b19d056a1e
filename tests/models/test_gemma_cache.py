"""The bundled Gemma's conversion reads its GGUF header once: within the conversion's block
``gguf.GGUFReader`` builds one reader per file and mode (transformers' config, tokenizer
and model loaders each ask for one), and the real class is back afterwards, also when the
conversion fails."""

from __future__ import annotations

from typing import Any, ClassVar

import gguf
import pytest

from edgespec.models.gemma_cache import _one_reader_per_file


class _CountingReader:
    built: ClassVar[list[tuple[str, str]]] = []

    def __init__(self, path: Any, mode: str = "r") -> None:
        _CountingReader.built.append((str(path), mode))


def test_one_reader_per_file_and_mode_within_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gguf, "GGUFReader", _CountingReader)
    _CountingReader.built.clear()
    with _one_reader_per_file():
        config, tokenizer, model = (gguf.GGUFReader("/m/a.gguf") for _ in range(3))
        other = gguf.GGUFReader("/m/b.gguf")
        written = gguf.GGUFReader("/m/a.gguf", "r+")
    assert config is tokenizer is model and other is not model and written is not model
    assert _CountingReader.built == [("/m/a.gguf", "r"), ("/m/b.gguf", "r"), ("/m/a.gguf", "r+")]
    module: Any = gguf
    assert module.GGUFReader is _CountingReader  # restored
    with pytest.raises(RuntimeError, match="conversion failed"), _one_reader_per_file():
        raise RuntimeError("conversion failed")
    assert module.GGUFReader is _CountingReader
    assert gguf.GGUFReader("/m/a.gguf") is not config  # outside the block: built afresh
