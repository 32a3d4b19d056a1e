"""The bundled Gemma 3 270M, converted once: transformers dequantizes its GGUF on every load
(a minute on two cores), so the first load writes the fp32 weights to edgespec's cache
directory (``$EDGESPEC_CACHE`` or ``~/.cache/edgespec``) as an ordinary Hugging Face
directory, which later loads read in seconds (bit-identical logits). A load of the tokenizer alone
(``edgespec draft --draft ngram`` against a Gemma server, the endpoint's text) does not
convert the weights: before they are converted, it reads a copy of the tokenizer alone,
written once from the GGUF (:func:`gemma_tokenizer_directory`). The tokenizer gets Gemma
3's chat template (:mod:`edgespec.models.chat_templates`: the GGUF carries none)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from edgespec.bundled_gguf import bundled_gguf, cache_dir, gguf_digest
from edgespec.models.chat_templates import with_chat_template
from edgespec.models.gguf_file import one_reader_per_file, reader_stop_ids
from edgespec.models.registry import ModelNotFoundError, ModelSource, resolve_model

SOURCE_FILE = "source.json"
"""The file of a copy made from the GGUF that says what it was made from (:func:`_copy_key`)."""


def _copy_key() -> str:
    """What a copy made from the GGUF was made from: the GGUF's SHA-256 and the version of
    transformers that read it. A copy whose :data:`SOURCE_FILE` says otherwise (another GGUF
    release, another transformers) is made again: one made by the old ones was reused."""
    return json.dumps({"gguf_sha256": gguf_digest(), "transformers": version("transformers")})


def _fp32_copy() -> Path:
    """Where the fp32 copy lives."""
    return cache_dir() / "models" / "gemma3-270m-fp32"


def _tokenizer_copy() -> Path:
    """Where the copy of the tokenizer alone lives."""
    return cache_dir() / "models" / "gemma3-270m-tokenizer"


def gemma_converted() -> bool:
    """Whether the bundled Gemma's fp32 copy, made from this GGUF, is in the cache."""
    return is_complete(_fp32_copy(), "model.safetensors", _copy_key())


def needs_conversion(name: str) -> bool:
    """Whether loading model ``name`` first converts it (``gemma3-270m`` before its fp32
    copy is cached: 25 s on README's 2-core machine)."""
    try:
        spec = resolve_model(name)
    except ModelNotFoundError:
        return False
    return spec.source is ModelSource.GEMMA3_270M_GGUF and not gemma_converted()


def is_complete(out_dir: Path, marker: str, source: str | None) -> bool:
    """``out_dir`` holds its ``marker`` file and, with ``source``, its :data:`SOURCE_FILE`
    says that text (it was made from that source)."""
    if source is not None:
        try:
            if (out_dir / SOURCE_FILE).read_text(encoding="utf-8") != source:
                return False
        except (OSError, UnicodeDecodeError):
            return False
    return (out_dir / marker).is_file()


def converted_once(
    out_dir: Path,
    convert: Callable[[Path], None],
    marker: str = "model.safetensors",
    source: str | None = None,
) -> Path:
    """``out_dir``, made by ``convert(a temporary folder beside it)`` and renamed into place
    unless a complete copy (its ``marker`` file; with ``source``, its :data:`SOURCE_FILE`
    saying that text too: what it was made from) is there: one process converts at a time
    (a lock file beside it), and one that waited for another finds its copy made (two
    first loads at once both converted for a minute, and the second died on the rename
    with ``Directory not empty``, its 1.1 GB folder left behind). A conversion that fails
    or is stopped leaves no temporary folder; one a killed process left, or an incomplete
    or stale ``out_dir``, is removed before converting."""
    if is_complete(out_dir, marker, source):
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with out_dir.with_name(out_dir.name + ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if is_complete(out_dir, marker, source):
            return out_dir
        for stale in [*out_dir.parent.glob(f"{out_dir.name}.tmp*"), out_dir]:
            shutil.rmtree(stale, ignore_errors=True)
        tmp = out_dir.with_name(out_dir.name + f".tmp{os.getpid()}")
        tmp.mkdir()
        try:
            convert(tmp)
            if source is not None:
                (tmp / SOURCE_FILE).write_text(source, encoding="utf-8")
            tmp.rename(out_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return out_dir


def _convert_gguf(gguf_path: Path, tmp: Path) -> None:
    """Dequantize a GGUF model and save it into ``tmp`` as a plain HF directory."""
    import gguf
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM

    with one_reader_per_file():  # the tokenizer's reader is the model's (nested blocks share)
        _save_gguf_tokenizer(gguf_path, tmp)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
        )
        stop_ids = sorted(reader_stop_ids(gguf.GGUFReader(str(gguf_path))))
    model.generation_config.eos_token_id = stop_ids or None  # the stop rule: models/gguf_file.py
    model.config.save_pretrained(str(tmp))
    config_path = tmp / "config.json"
    config = json.loads(config_path.read_text())
    config.pop("quantization_config", None)
    config_path.write_text(json.dumps(config, indent=2))
    model.generation_config.save_pretrained(str(tmp))
    save_model(model, str(tmp / "model.safetensors"))


def _save_gguf_tokenizer(gguf_path: Path, tmp: Path) -> None:
    """The GGUF's tokenizer saved into ``tmp``: the tokenizer's own copy, and the fp32 copy's
    (its added tokens indexed in its config, :func:`index_added_tokens`)."""
    from transformers import AutoTokenizer

    with one_reader_per_file():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    tokenizer.save_pretrained(str(tmp))
    index_added_tokens(tmp)


def index_added_tokens(directory: Path) -> None:
    """The tokenizer's added tokens (``tokenizer.json``'s ``added_tokens``) written into its
    ``tokenizer_config.json`` as ``added_tokens_decoder``, unless they are there: without
    them transformers parses the 33 MB ``tokenizer.json`` in Python once more on every load,
    for those tokens alone (1.5 s of a 3.5 s load on two cores); with them it reads the same
    tokens, the same fields, from the config. Written once (a cache made before reads its
    tokens on its next load), the file replaced whole; a cache this process may not write
    is left as it is."""
    config_path = directory / "tokenizer_config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        if "added_tokens_decoder" in config:
            return
        tokenizer = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
        tokens = tokenizer["added_tokens"]
        config["added_tokens_decoder"] = {
            str(token["id"]): {k: v for k, v in token.items() if k != "id"} for token in tokens
        }
        tmp = config_path.with_name(f"{config_path.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, config_path)
    except OSError:
        return


def gemma_directory() -> Path:
    """The fp32 copy, converted first when it is not cached (a minute on two cores)."""
    if gemma_converted():
        return _fp32_copy()
    gguf_path = bundled_gguf()
    return converted_once(
        _fp32_copy(), lambda tmp: _convert_gguf(gguf_path, tmp), source=_copy_key()
    )


def gemma_tokenizer_directory() -> Path:
    """Where the bundled Gemma's tokenizer loads from without converting its weights: the
    fp32 copy once it is there, else the tokenizer's own copy (made once from the GGUF)."""
    if gemma_converted():
        return _fp32_copy()
    gguf_path = bundled_gguf()
    return converted_once(
        _tokenizer_copy(), lambda tmp: _save_gguf_tokenizer(gguf_path, tmp),
        marker="tokenizer.json", source=_copy_key(),
    )  # fmt: skip


def gemma_tokenizer(directory: Path) -> Any:
    """The bundled Gemma's tokenizer, with Gemma 3's chat template (its GGUF has none); its
    added tokens read from its config (:func:`index_added_tokens`)."""
    from transformers import AutoTokenizer

    index_added_tokens(directory)
    return with_chat_template(AutoTokenizer.from_pretrained(str(directory)), "gemma3")
