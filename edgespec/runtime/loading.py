"""Model loading for ``edgespec serve`` / ``edgespec draft``.

A local Hugging Face directory (``config.json`` + weights) is loaded directly, with its
tokenizer when it has one (tiny test models have none). Anything else (``gemma3-270m``,
bundled drafts, ``.gguf`` files) goes through :func:`edgespec.models.loading.load_model`,
the project's one model-name resolver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_model_and_tokenizer(name: str, dtype: str = "float32") -> tuple[Any, Any | None]:
    """Return ``(model, tokenizer or None)`` for a model name or path, in eval mode."""
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        from edgespec.runtime.backends.transformers_backend import load_causal_lm

        model = load_causal_lm(str(path), dtype)
        return model, load_tokenizer(str(path))
    import importlib

    import torch

    # edgespec.models (LEARN) resolves names; imported dynamically so the runtime does not
    # depend on its typing at check time.
    load_model = importlib.import_module("edgespec.models.loading").load_model
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}.get(dtype, torch.float16)
    loaded = load_model(name, dtype=torch_dtype)
    return loaded.model, loaded.tokenizer


def load_tokenizer(name: str) -> Any | None:
    """The tokenizer saved with a model directory (``None`` if it has none), or that of a
    known model name (``gemma3-270m``, bundled drafts). Never goes to the network."""
    from transformers import AutoTokenizer

    from edgespec.models.registry import KNOWN_MODELS

    if name in KNOWN_MODELS:
        return load_model_and_tokenizer(name)[1]
    try:
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError, TypeError):
        return None
