"""The project's one model loader: a model name or path (resolved by
:func:`edgespec.models.registry.resolve_model`) → the model in eval mode and its tokenizer,
for the CLI, the runtime and the learning tools alike; and the one map of dtype names
(torch and transformers imported lazily).

Gemma 3 270M ships as a GGUF file, converted once into edgespec's cache
(:mod:`edgespec.models.gemma_cache`).

A load prints nothing of the libraries' own (transformers' "Loading weights" and GGUF
"Converting and de-quantizing" progress bars, its deprecation warnings) unless asked with
``verbose=True`` (:func:`~edgespec.models.library_output.library_output`); their settings
are back as they were after it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.arguments import DTYPE_NAMES
from edgespec.models.devices import check_device_available
from edgespec.models.gemma_cache import gemma_directory, gemma_tokenizer, gemma_tokenizer_directory
from edgespec.models.gguf_file import gguf_problem, load_gguf, unusable_gguf
from edgespec.models.library_output import library_output
from edgespec.models.registry import (
    FEATURE_DRAFT_MARKER,
    TRIMMED_MARKER,
    BrokenModelError,
    ModelNotFoundError,
    ModelSource,
    ModelSpec,
    resolve_model,
)

if TYPE_CHECKING:
    import torch

__all__ = ["DTYPE_NAMES", "LoadedModel", "load_model", "load_tokenizer", "torch_dtype"]


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a name in :data:`DTYPE_NAMES`."""
    import torch

    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in dtypes:
        raise ValueError(f"dtype must be one of {sorted(dtypes)}, got {name!r}")
    return dtypes[name]


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A causal LM (``model``: a ``torch.nn.Module`` in eval mode) and its tokenizer
    (``None`` for a draft saved without one whose target is unknown); ``weight_files``:
    the files its weights and configuration were read from (empty for drafts)."""

    spec: ModelSpec
    model: Any
    tokenizer: Any
    weight_files: tuple[Path, ...] = ()


TOKENIZER_FILES = ("tokenizer", "special_tokens_map", "added_tokens", "chat_template", "vocab")
"""Names a Hugging Face directory's tokenizer files begin with: no logit depends on them."""


def _directory_files(directory: Path) -> tuple[Path, ...]:
    """A Hugging Face directory's configuration and weight files (what its logits depend
    on: its tokenizer's files left out, so that indexing them changes no probe key)."""
    names = ("*.json", "*.safetensors", "*.bin")
    found = (p for pattern in names for p in directory.glob(pattern))
    return tuple(sorted(p for p in found if not p.name.startswith(TOKENIZER_FILES)))


def _draft_tokenizer(directory: Path, draft: Any) -> Any:
    """A trimmed draft speaks its target's ids: its own tokenizer files if it has them,
    else its target's tokenizer (by the target name in its config), else ``None``."""
    from transformers import AutoTokenizer

    if (directory / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(str(directory))
    target_name = str(getattr(draft.config, "target_name", ""))
    if not target_name:
        return None
    target = resolve_model(target_name)
    if target.source is ModelSource.GEMMA3_270M_GGUF:
        return gemma_tokenizer(gemma_tokenizer_directory())
    if target.source is ModelSource.HF_DIRECTORY and target.path is not None:
        return AutoTokenizer.from_pretrained(str(target.path))
    return None


def load_model(
    name_or_spec: str | ModelSpec,
    dtype: str = "float32",
    num_threads: int | None = None,
    target: LoadedModel | None = None,
    require_tokenizer: bool = False,
    verbose: bool = False,
    device: str = "cpu",
    with_tokenizer: bool = True,
) -> LoadedModel:
    """Load a model by name or path (see :func:`resolve_model`), in eval mode on ``device``
    (``cpu``, ``cuda`` or ``cuda:N``; one torch cannot use is a
    :class:`~edgespec.errors.UserInputError` naming ``--device``, before any weight is
    read), with weights in ``dtype`` (one of :data:`DTYPE_NAMES`).

    A local Hugging Face directory saved without a tokenizer (tiny test models) loads with
    ``tokenizer=None``, unless ``require_tokenizer`` (then :class:`ModelNotFoundError`).
    ``with_tokenizer=False`` reads no tokenizer (``tokenizer=None``; a GGUF file's comes with
    its weights): for a caller that sees token ids only, a verification server say (Gemma's
    takes seconds to load).
    A feature draft (:mod:`edgespec.models.feature_draft`) takes its embedding and head
    rows from its target: ``target`` if given, else the target named in its config.
    The libraries' progress bars and warnings show only when ``verbose``."""
    spec = resolve_model(name_or_spec) if isinstance(name_or_spec, str) else name_or_spec
    weights = torch_dtype(dtype)
    check_device_available(device)
    with library_output(verbose):
        loaded = _load(spec, weights, num_threads, target, verbose, device, with_tokenizer)
        if device != "cpu":  # loaded on the CPU: nothing to move there
            loaded.model.to(device)
    if require_tokenizer and loaded.tokenizer is None:
        raise ModelNotFoundError(f"model {spec.name!r} has no tokenizer")
    return loaded


def load_tokenizer(name: str, verbose: bool = False) -> Any | None:
    """The tokenizer of a model name or path, without loading its weights: the one saved
    with it, else (a trimmed or feature draft) its target's by the ``target_name`` in its
    config; ``None`` when it has neither or the name resolves to no model. A model that is
    there but cut off (a trimmed draft without its marker) is the registry's
    :class:`~edgespec.models.registry.BrokenModelError`, not ``None``. Never goes to the
    network. The libraries' progress bars and warnings show only when ``verbose``. A
    directory of a tokenizer alone (its ``tokenizer_config.json``; no config nor weights)
    is read too."""
    alone = Path(name).expanduser()
    if _tokenizer_alone(alone):
        with library_output(verbose):
            return _saved_tokenizer(str(alone))
    try:
        spec = resolve_model(name)
    except BrokenModelError:
        raise
    except ModelNotFoundError:
        return None
    with library_output(verbose):
        if spec.source is ModelSource.GEMMA3_270M_GGUF:
            return gemma_tokenizer(gemma_tokenizer_directory())
        if spec.source is ModelSource.GGUF_FILE or spec.path is None:
            return load_model(spec, verbose=verbose).tokenizer
        if (spec.path / "tokenizer_config.json").is_file():
            return _saved_tokenizer(str(spec.path))
        target_name = _target_name(spec.path)
        return load_tokenizer(target_name, verbose) if target_name else None


def _tokenizer_alone(directory: Path) -> bool:
    """Whether ``directory`` holds a saved tokenizer and no model (config or weights)."""
    model = [FEATURE_DRAFT_MARKER, "config.json"]
    return (directory / "tokenizer_config.json").is_file() and not (
        any((directory / name).is_file() for name in model) or any(directory.glob("*.safetensors"))
    )


def _target_name(directory: Path) -> str | None:
    """The ``target_name`` a draft directory's config names (trimmed or feature draft)."""
    for file in (FEATURE_DRAFT_MARKER, "config.json"):
        path = directory / file
        if path.is_file():
            name = json.loads(path.read_text()).get("target_name")
            if isinstance(name, str) and name:
                return name
    return None


def _saved_tokenizer(directory: str) -> Any | None:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError, TypeError):
        return None


def _load(
    spec: ModelSpec,
    dtype: torch.dtype,
    num_threads: int | None,
    target: LoadedModel | None,
    verbose: bool,
    device: str,
    with_tokenizer: bool = True,
) -> LoadedModel:
    import torch
    from transformers import AutoModelForCausalLM

    if num_threads is not None:
        torch.set_num_threads(num_threads)
    if spec.source is ModelSource.FEATURE_DRAFT:
        return _load_feature_draft(spec, target, verbose, dtype, device)
    if spec.source is ModelSource.BUNDLED_DRAFT or (
        spec.path is not None and (spec.path / TRIMMED_MARKER).is_file()
    ):
        from edgespec.models.trimmed import TrimmedVocabDraft

        assert spec.path is not None
        draft = TrimmedVocabDraft.load(spec.path, dtype=dtype)
        words = _draft_tokenizer(spec.path, draft) if with_tokenizer else None
        return LoadedModel(spec=spec, model=draft, tokenizer=words)
    tokenizer: Any
    if spec.source is ModelSource.GEMMA3_270M_GGUF:
        directory = gemma_directory()
        model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=dtype)
        tokenizer = gemma_tokenizer(directory) if with_tokenizer else None
        files = _directory_files(directory)
    elif spec.source is ModelSource.GGUF_FILE:
        assert spec.path is not None
        model, tokenizer = _load_gguf(spec.path, dtype)
        files = (spec.path,)
    else:
        assert spec.path is not None
        model = AutoModelForCausalLM.from_pretrained(str(spec.path), dtype=dtype)
        tokenizer = _saved_tokenizer(str(spec.path)) if with_tokenizer else None
        files = _directory_files(spec.path)
    model.eval()  # type: ignore[no-untyped-call]
    return LoadedModel(spec=spec, model=model, tokenizer=tokenizer, weight_files=files)


def _load_gguf(path: Path, dtype: torch.dtype) -> tuple[Any, Any]:
    """:func:`~edgespec.models.gguf_file.load_gguf`; a file it cannot load for being no
    GGUF file, or a truncated or corrupt one, is a one-line :class:`BrokenModelError`."""
    try:
        return load_gguf(path, dtype)
    except Exception:
        problem = gguf_problem(path)
        if problem is None:  # the file reads whole: the library's own reason stands
            raise
        raise BrokenModelError(unusable_gguf(path, problem)) from None


def _load_feature_draft(
    spec: ModelSpec, target: LoadedModel | None, verbose: bool, dtype: torch.dtype, device: str
) -> LoadedModel:
    """A feature draft (float32, its rows from ``target``, else from its target loaded in
    ``dtype`` on ``device``)."""
    from edgespec.models.feature_draft import FeatureDraftConfig, load_feature_draft

    assert spec.path is not None
    if target is None:
        config = FeatureDraftConfig.from_file(spec.path / FEATURE_DRAFT_MARKER)
        name = str(dtype).removeprefix("torch.")
        target = load_model(config.target_name, name, verbose=verbose, device=device)
    net = load_feature_draft(spec.path, target.model)
    return LoadedModel(spec=spec, model=net, tokenizer=target.tokenizer)
