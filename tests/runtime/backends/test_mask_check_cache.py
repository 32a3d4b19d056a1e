"""runtime/backends/mask_check_cache.py: the attention-mask probe runs on a model's first
load, is skipped on the next with the same weights and software, and runs again when the
weights, the dtype or the masking code change; a model built in memory always probes, and
a model that fails the probe is refused every time (a failure is never recorded)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.models.loading import load_model
from edgespec.runtime.backends import attention_mask
from edgespec.runtime.backends.attention_mask import UnsupportedAttentionError
from edgespec.runtime.backends.mask_check_cache import has_recorded_pass, load_checked_target
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_llama


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the probes run (each still runs for real)."""
    runs: list[int] = []
    real = TransformersTarget._check_exact_masking

    def counted(self: TransformersTarget) -> None:
        runs.append(1)
        real(self)

    monkeypatch.setattr(TransformersTarget, "_check_exact_masking", counted)
    return runs


def _saved(tmp_path: Path) -> Path:
    directory = tmp_path / "tiny"
    tiny_llama(seed=2).save_pretrained(str(directory))
    return directory


def _load(directory: Path, cache: Path, dtype: str = "float32") -> Any:
    loaded = load_model(str(directory), dtype)
    return load_checked_target(loaded.model, loaded.weight_files, cache)


def test_a_pass_is_recorded_and_reused(tmp_path: Path, probes: list[int]) -> None:
    directory, cache = _saved(tmp_path), tmp_path / "cache"
    assert _load(directory, cache).probed and len(probes) == 1
    again = _load(directory, cache)
    assert not again.probed and len(probes) == 1
    assert again.target.vocab_size == 64
    records = list((cache / "checks" / "attention-masks").iterdir())
    assert len(records) == 1 and records[0].suffix == ".json"


def test_new_weights_or_dtype_probe_again(tmp_path: Path, probes: list[int]) -> None:
    directory, cache = _saved(tmp_path), tmp_path / "cache"
    _load(directory, cache)
    weights = directory / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert _load(directory, cache).probed and len(probes) == 2
    assert _load(directory, cache, "bfloat16").probed and len(probes) == 3
    assert not _load(directory, cache).probed and len(probes) == 3


def test_a_changed_tokenizer_file_probes_nothing_again(tmp_path: Path, probes: list[int]) -> None:
    """No logit depends on the tokenizer: its added tokens indexed into its config
    (edgespec.models.gemma_cache.index_added_tokens) made every server start probe again."""
    from tests.runtime.openai_api.byte_tokenizer import tiny_byte_tokenizer

    directory, cache = _saved(tmp_path), tmp_path / "cache"
    tiny_byte_tokenizer().save_pretrained(str(directory))
    _load(directory, cache)
    config = directory / "tokenizer_config.json"
    config.write_text(config.read_text() + "\n")
    assert not _load(directory, cache).probed and len(probes) == 1
    model_config = directory / "config.json"  # the model's own configuration still counts
    stat = model_config.stat()
    os.utime(model_config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert _load(directory, cache).probed and len(probes) == 2


def test_another_instruction_set_or_thread_count_probes_again(
    tmp_path: Path, probes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass recorded on an AVX2 CPU proves nothing on an AVX-512 one (MKL picks other
    kernels), nor one at 1 thread for 2 (other splits)."""
    directory, cache = _saved(tmp_path), tmp_path / "cache"
    _load(directory, cache)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2-elsewhere")
    assert _load(directory, cache).probed and len(probes) == 2
    before = torch.get_num_threads()
    torch.set_num_threads(1 if before != 1 else 2)
    try:
        assert _load(directory, cache).probed and len(probes) == 3
    finally:
        torch.set_num_threads(before)
    assert not _load(directory, cache).probed and len(probes) == 3


def test_changed_masking_code_probes_again(
    tmp_path: Path, probes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, cache = _saved(tmp_path), tmp_path / "cache"
    _load(directory, cache)
    edited = tmp_path / "attention_mask.py"
    edited.write_text(Path(str(attention_mask.__file__)).read_text() + "\n# edit\n")
    monkeypatch.setattr(attention_mask, "__file__", str(edited))
    assert _load(directory, cache).probed and len(probes) == 2


def test_a_model_in_memory_always_probes(tmp_path: Path, probes: list[int]) -> None:
    model = tiny_llama(seed=2)
    for _ in range(2):
        assert load_checked_target(model, (), tmp_path).probed
    assert len(probes) == 2 and not has_recorded_pass(model, (), tmp_path)


def test_a_failed_probe_is_never_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory, cache = _saved(tmp_path), tmp_path / "cache"

    def failing(self: TransformersTarget) -> None:
        raise UnsupportedAttentionError("probe off")

    monkeypatch.setattr(TransformersTarget, "_check_exact_masking", failing)
    for _ in range(2):
        with pytest.raises(UnsupportedAttentionError, match="probe off"):
            _load(directory, cache)
    assert not (cache / "checks").exists()


def test_a_probe_says_what_changed_since_the_last_recorded_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm start that probed again for a minute said nothing of why (a newcomer audit:
    77 s where README says 6); now it names what differs from the nearest recorded pass of
    the same weights and numerics."""
    directory, cache = _saved(tmp_path), tmp_path / "cache"
    heard: list[str | None] = []
    real = torch.backends.cpu.get_cpu_capability()

    def load() -> None:
        loaded = load_model(str(directory), "float32")
        load_checked_target(loaded.model, loaded.weight_files, cache, heard.append)

    load()
    load()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2-elsewhere")
    load()
    edited = tmp_path / "attention_mask.py"
    edited.write_text(Path(str(attention_mask.__file__)).read_text() + "\n# edit\n")
    monkeypatch.setattr(attention_mask, "__file__", str(edited))
    load()
    assert heard == [
        "no pass recorded for these weight files",
        None,
        f"changed since the last recorded pass: cpu_capability AVX2-elsewhere (recorded: {real})",
        "changed since the last recorded pass: edgespec's masking code",
    ]


def test_a_cache_that_cannot_be_written_serves_the_target_and_says_so(
    tmp_path: Path, probes: list[int]
) -> None:
    """A read-only cache (a container image, ProtectHome=read-only) refused to serve once
    the probes had passed: `edgespec serve: <cache>/checks: Read-only file system`, exit 2,
    and so at every start. The pass is served, unrecorded, and says why."""
    directory, cache = _saved(tmp_path), tmp_path / "cache"
    cache.mkdir()
    (cache / "checks").write_text("a file where the folder would go")  # mkdir fails
    checked = _load(directory, cache)
    assert checked.probed and checked.target.vocab_size == 64
    assert checked.unrecorded is not None and str(cache / "checks") in checked.unrecorded
    assert _load(directory, cache).probed and len(probes) == 2  # the next start probes again
