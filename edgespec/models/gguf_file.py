"""GGUF files as models: what makes a file one (its magic bytes, not its name), what is wrong
with one that cannot be loaded (said in one line by both backends), transformers' load of one
(its metadata parsed once, not once per loader), and the one rule for the tokens that end a
generation.

The stop rule, the same on both backends so that a model's tokens do not depend on which
serves it: a GGUF model stops on the ids its metadata declares under :data:`STOP_ID_KEYS`
(``tokenizer.ggml.eos_token_id``, ``eot_token_id``, ``eom_token_id``) and nothing else: not
llama.cpp's guess of an end-of-turn token by its text (``llama_vocab_eot`` picks a token
spelled ``<end_of_turn>``, ``<|eot_id|>``, ... when the file declares none), nor transformers'
per-family additions. A Hugging Face directory stops on its ``generation_config.json``
``eos_token_id`` (else ``config.json``'s). A chat reply also ends at its template's
end-of-turn token (:func:`edgespec.models.chat_templates.end_of_turn_ids`), on either backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from edgespec.models.chat_templates import with_chat_template

GGUF_MAGIC = b"GGUF"
NOT_GGUF = "it does not start with the GGUF magic bytes"
STOP_ID_KEYS = (
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.eot_token_id",
    "tokenizer.ggml.eom_token_id",
)
"""The metadata keys whose ids end a generation (see the module docstring)."""


def has_gguf_magic(path: Path) -> bool:
    """Whether the regular file ``path`` starts with the GGUF magic bytes."""
    with path.open("rb") as file:
        return file.read(len(GGUF_MAGIC)) == GGUF_MAGIC


def unusable_gguf(path: Path, problem: str) -> str:
    """The one-line refusal of a GGUF file, naming it and ``problem``."""
    return f"model file {str(path)!r} is not a usable GGUF file: {problem}"


def gguf_problem(path: Path) -> str | None:
    """What is wrong with the GGUF file ``path`` (no magic bytes, or a header or tensor data
    that cannot be read: truncated or corrupt), or ``None`` when its metadata and tensors read
    whole (then a loader's refusal has another cause: an architecture it does not know)."""
    if not has_gguf_magic(path):
        return NOT_GGUF
    import gguf

    try:
        gguf.GGUFReader(str(path))
    except Exception as exc:  # whatever the reader trips on, the file is not whole
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"it is truncated or corrupt ({reason})"
    return None


def declared_stop_ids(value_of: Callable[[str], int | None]) -> frozenset[int]:
    """The stop ids of a GGUF model whose metadata value of a key is ``value_of(key)``
    (``None``: not declared): those of :data:`STOP_ID_KEYS` that are declared."""
    ids = (value_of(key) for key in STOP_ID_KEYS)
    return frozenset(i for i in ids if i is not None and i >= 0)


def reader_stop_ids(reader: Any) -> frozenset[int]:
    """:func:`declared_stop_ids` of a ``gguf.GGUFReader``'s fields."""

    def value_of(key: str) -> int | None:
        field = reader.fields.get(key)
        return int(field.parts[field.data[0]][0]) if field is not None and field.data else None

    return declared_stop_ids(value_of)


@contextmanager
def one_reader_per_file() -> Iterator[None]:
    """While in it, ``gguf.GGUFReader`` parses a file once, not once per caller.

    transformers' config, tokenizer and model loaders each build a reader of the file, and
    parsing the metadata (Gemma 3's 262,144-token vocabulary, in pure Python) is most of a
    load; dequantizing the weights is a few seconds. Within this block a reader is built
    once per file and mode (a reader is only read: fields and lazy tensor views)."""
    import gguf as gguf_module

    gguf: Any = gguf_module  # its reader class is replaced for the block, then restored
    real = gguf.GGUFReader
    readers: dict[tuple[str, str], Any] = {}

    def reader(path: Any, mode: str = "r") -> Any:
        key = (str(path), mode)
        if key not in readers:
            readers[key] = real(path, mode)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = real


def load_gguf(path: Path, dtype: Any) -> tuple[Any, Any]:
    """transformers' model (weights dequantized to ``dtype``) and tokenizer of the GGUF file
    ``path``, the model stopping on the file's declared stop ids (the module's rule), the
    tokenizer given a chat template if it has none."""
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    parent, name = str(path.parent), path.name
    with one_reader_per_file():
        model = AutoModelForCausalLM.from_pretrained(parent, gguf_file=name, dtype=dtype)
        raw = AutoTokenizer.from_pretrained(parent, gguf_file=name)
        tokenizer = with_chat_template(raw, str(model.config.model_type), path)
        stop_ids = sorted(reader_stop_ids(gguf.GGUFReader(str(path))))
    model.generation_config.eos_token_id = stop_ids or None
    return model, tokenizer
