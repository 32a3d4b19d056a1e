"""Model-name resolution: known names, local paths, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.models.registry import (
    TRIMMED_MARKER,
    TRIMMED_MODEL_TYPE,
    BrokenModelError,
    ModelNotFoundError,
    ModelSource,
    ModelSpec,
    resolve_model,
)


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


def test_a_near_miss_of_a_known_name_gets_the_closest(  # it listed the names only
) -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("gemma3-270m-drfat")
    assert str(info.value) == (
        "unknown model 'gemma3-270m-drfat' (did you mean 'gemma3-270m-draft'?): known names "
        "are gemma3-270m, gemma3-270m-draft, or give a path to a local Hugging Face model "
        "directory or .gguf file"
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


def test_a_trimmed_draft_without_its_marker_is_a_save_cut_off(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": TRIMMED_MODEL_TYPE}))
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model(str(tmp_path))
    assert str(info.value) == (
        f"model directory '{tmp_path}' holds a trimmed draft without its trimmed_vocab.json: "
        "its save was cut off before it finished; save or train the draft again"
    )
    (tmp_path / TRIMMED_MARKER).write_text("{}\n")
    assert resolve_model(str(tmp_path)).source is ModelSource.HF_DIRECTORY


def test_weights_without_a_config_are_a_save_cut_off(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"weights")  # a feature draft's, marker last
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model(str(tmp_path))
    assert str(info.value) == (
        f"model directory '{tmp_path}' has weights but neither config.json nor "
        "feature_draft.json: its save was cut off (a feature draft writes feature_draft.json "
        "last); save or train it again"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"model_type": "edgespec_trim', "is not valid JSON (Unterminated string starting at: "
         "line 1 column 16 (char 15)); save the model again"),
        ('["llama"]', "is not a JSON object"),
    ],
)  # fmt: skip
def test_a_config_that_is_no_json_object_is_named(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model(str(tmp_path))
    assert str(info.value) == f"model directory '{tmp_path}': config.json {problem}"


def test_an_existing_file_that_is_no_model_says_what_it_is(tmp_path: Path) -> None:
    """Not "does not exist" (it does)."""
    text = tmp_path / "x.txt"
    text.write_text("hello")
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model(str(text))
    assert str(info.value) == (
        f"'{text}' is a file but not a model: give a .gguf file or a Hugging Face model directory"
    )


def test_a_gguf_file_is_known_by_its_magic_bytes_not_its_name(tmp_path: Path) -> None:
    """Both backends read a GGUF by its magic bytes, whatever it is called."""
    model = tmp_path / "tinygguf.bin"
    model.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert resolve_model(str(model)) == ModelSpec("tinygguf", ModelSource.GGUF_FILE, model)


def test_a_gguf_named_file_without_the_magic_bytes_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(BrokenModelError) as info:
        resolve_model(str(bad))
    assert str(info.value) == (
        f"model file '{bad}' is not a usable GGUF file: it does not start with the GGUF magic bytes"
    )
