"""What a llama.cpp context's settings are checked against once the model file is loaded,
before the context allocates its KV memory (all of it at once: a context past the trained
one took the machine's memory, 23 GiB, and the process was killed)."""

from __future__ import annotations

from typing import Any

from edgespec.errors import UserInputError


def check_settings(lib: Any, model: Any, context_tokens: int) -> None:
    """Refuse (:class:`UserInputError`, ``model`` freed) a context of ``context_tokens`` a
    sequence past the model's trained context; ``lib``: llama-cpp-python's bindings, which
    loaded ``model``."""
    trained = int(lib.llama_model_n_ctx_train(model))
    if 0 < trained < context_tokens:
        lib.llama_model_free(model)
        raise UserInputError(f"--llamacpp-context {context_tokens} is past the model's trained "
                             f"context, {trained} tokens: give at most {trained}")  # fmt: skip


def gpu_layers_note(lib: Any, gpu_layers: int) -> str:
    """What serving says of ``gpu_layers`` offloaded on a build without a GPU (they stay on
    the CPU, and the self-check judges them there); empty otherwise."""
    if gpu_layers and not bool(lib.llama_supports_gpu_offload()):
        return (f"--llamacpp-gpu-layers {gpu_layers}: this llama.cpp build has no GPU, so "
                "every layer runs on the CPU (DEPLOY.md: a wheel built for one)")  # fmt: skip
    return ""
