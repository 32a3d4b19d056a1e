"""A tokenizer's chat template when its files carry none: the one in its GGUF file's
metadata (``tokenizer.chat_template``), else its model family's published format, shipped
in ``edgespec/data/chat_templates/<architecture>.jinja`` (Gemma 3: ``gemma3.jinja``, the
turns Google publishes for its instruction-tuned Gemma 3 models). The bundled target
``gemma3-270m`` is the pretrained (not instruction-tuned) 270M model, whose GGUF carries no
template: its chat is Gemma 3's format over a base model.

:func:`end_of_turn_ids` gives the tokens that end a reply under a template (the endpoint
stops a chat reply there even when the model's own EOS is another token)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

END_OF_TURN_MARKERS = ("<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|end|>")
"""Special tokens that end a chat turn in the common template families (Gemma, ChatML,
Llama 3, Phi)."""


def family_template(architecture: str) -> str | None:
    """The shipped chat template of a model family (``config.model_type`` or GGUF
    ``general.architecture``), or ``None``."""
    name = architecture.removesuffix("_text")  # Gemma 3's text-only config type
    path = resources.files("edgespec") / "data" / "chat_templates" / f"{name}.jinja"
    return path.read_text() if path.is_file() else None


def gguf_template(gguf_file: Path) -> str | None:
    """The ``tokenizer.chat_template`` in a GGUF file's metadata, or ``None``."""
    import gguf

    field = gguf.GGUFReader(str(gguf_file)).fields.get("tokenizer.chat_template")
    if field is None or not field.data:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def with_chat_template(tokenizer: Any, architecture: str, gguf_file: Path | None = None) -> Any:
    """``tokenizer`` given a chat template if it has none (see the module docstring);
    unchanged when it has one or none can be found."""
    if tokenizer is None or getattr(tokenizer, "chat_template", None):
        return tokenizer
    template = gguf_template(gguf_file) if gguf_file is not None else None
    template = template or family_template(architecture)
    if template is not None:
        tokenizer.chat_template = template
    return tokenizer


def end_of_turn_ids(tokenizer: Any) -> frozenset[int]:
    """The :data:`END_OF_TURN_MARKERS` that are single tokens of ``tokenizer`` and appear in
    its chat template (none without a template)."""
    template = getattr(tokenizer, "chat_template", None)
    if not isinstance(template, str):
        return frozenset()
    ids = set()
    for marker in (m for m in END_OF_TURN_MARKERS if m in template):
        token_id = tokenizer.convert_tokens_to_ids(marker)  # a lookup, not the whole vocabulary
        if isinstance(token_id, int) and tokenizer.convert_ids_to_tokens(token_id) == marker:
            ids.add(token_id)  # (an unknown marker maps to the unknown token, not back to itself)
    return frozenset(ids)
