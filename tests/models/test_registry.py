"""Model-name resolution: known names, local paths, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.models.registry import ModelNotFoundError, ModelSource, resolve_model


def test_known_target_name_resolves_to_the_gguf_package() -> None:
    spec = resolve_model("gemma3-270m")
    assert spec.source is ModelSource.GEMMA3_270M_GGUF
    assert spec.path is None


def test_unknown_name_lists_the_known_names() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("llama-9000")
    assert str(info.value) == (
        "unknown model 'llama-9000': known names are gemma3-270m, gemma3-270m-draft, "
        "or give a path to a local Hugging Face model directory or .gguf file"
    )


def test_missing_path_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ModelNotFoundError, match=f"model path '{missing}' does not exist"):
        resolve_model(str(missing))


def test_missing_gguf_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "m.gguf"
    with pytest.raises(ModelNotFoundError, match=f"model file '{missing}' does not exist"):
        resolve_model(str(missing))


def test_directory_without_config_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="has no config.json"):
        resolve_model(str(tmp_path))


def test_hf_directory_resolves(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    spec = resolve_model(str(tmp_path))
    assert spec.source is ModelSource.HF_DIRECTORY
    assert spec.path == tmp_path
    assert spec.name == tmp_path.name
