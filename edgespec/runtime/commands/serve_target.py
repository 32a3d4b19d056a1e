"""``edgespec serve --backend``: which library runs the target, its flags, and the load.

``transformers`` (default) loads the model with transformers (a GGUF is dequantized to
fp32) and runs it on batch-invariant kernels, refusing to serve when its load-time
self-check finds batched logits that differ from one-at-a-time ones
(:mod:`edgespec.runtime.backends.exactness`); ``transformers-lossy`` runs the library's
own batched kernels, served even when they differ (said on stderr); ``llamacpp`` runs the
GGUF itself on llama.cpp in the exact (batch-invariant) configuration under the same
self-check; ``llamacpp-lossy`` is llama.cpp's faster defaults, chosen by name, served even
when the self-check finds a difference (said on stderr).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgespec.argument_types import int_at_most, non_negative_int, positive_int

BACKENDS = ("transformers", "transformers-lossy", "llamacpp", "llamacpp-lossy")
TRANSFORMERS = ("transformers", "transformers-lossy")
MAX_LLAMACPP_SEQUENCES = 256  # llama.cpp's LLAMA_MAX_SEQ: a context of more is refused


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and the llama.cpp context's size."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="transformers",
        help="what runs the target: transformers (default; a GGUF is dequantized to fp32; "
        "batch-invariant kernels, exact: refuses to serve if batched logits differ from "
        "one-at-a-time ones at load), transformers-lossy (the library's own batched "
        "kernels, faster; outputs may differ from target-only decoding in near ties), "
        "llamacpp (the GGUF on llama.cpp, exact, the same self-check), llamacpp-lossy "
        "(llama.cpp's faster defaults; outputs may differ from target-only decoding)",
    )
    parser.add_argument(
        "--llamacpp-sequences",
        type=int_at_most(MAX_LLAMACPP_SEQUENCES, " (the most sequences a llama.cpp context holds)"),
        help="llamacpp: KV sequences, the most sessions holding a cache at once "
        "(max_sessions is capped to it; default 16)",
    )
    parser.add_argument(
        "--llamacpp-gpu-layers",
        type=non_negative_int,
        help="llamacpp: layers offloaded to a GPU, with a wheel built for one (docs/RUNTIME.md; "
        "default 0, the CPU only); the self-check at load judges the device that runs them",
    )
    parser.add_argument(
        "--llamacpp-context",
        type=positive_int,
        help="llamacpp: tokens per sequence, prompt + output + draft (default 2048; the KV "
        "memory is sequences × this)",
    )


@dataclass(frozen=True, slots=True)
class TargetChoice:
    """The backend ``--backend`` names; ``llama`` holds the llama.cpp context settings."""

    name: str
    llama: Any = None  # LlamaCppSettings for llamacpp*, else None


LLAMACPP_DEFAULTS = {"llamacpp_sequences": 16, "llamacpp_gpu_layers": 0, "llamacpp_context": 2048}
"""The ``--llamacpp-*`` flags' values when not given (llamacpp backends only)."""


def target_choice(args: argparse.Namespace, target: str, threads: int | None) -> TargetChoice:
    """The backend and, for llama.cpp, its settings; a target that is no GGUF is a
    :class:`~edgespec.models.registry.ModelNotFoundError` here, before anything loads. A
    ``--llamacpp-*`` flag given with a transformers backend is refused (it did nothing: a
    ``--llamacpp-sequences`` cap on sessions, ``--llamacpp-gpu-layers`` on a GPU)."""
    from edgespec.errors import UserInputError

    name = getattr(args, "backend", "transformers")
    given = [k for k in LLAMACPP_DEFAULTS if getattr(args, k, None) is not None]
    if name in TRANSFORMERS:
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise UserInputError(f"{flag} is for --backend llamacpp or llamacpp-lossy, not {name}")
        return TargetChoice(name)
    llama = {k: d if getattr(args, k, None) is None else getattr(args, k)
             for k, d in LLAMACPP_DEFAULTS.items()}  # fmt: skip

    if getattr(args, "device", None) not in (None, "cpu"):
        raise UserInputError(
            f"--device {args.device} is for --backend transformers; llama.cpp puts layers on "
            "a GPU with --llamacpp-gpu-layers N"
        )
    if getattr(args, "dtype", None) is not None:
        raise UserInputError(
            f"--dtype {args.dtype} is for --backend transformers; llama.cpp runs the GGUF "
            "file's own quantization"
        )
    from edgespec.models.registry import model_file
    from edgespec.runtime.backends.llamacpp_context import LlamaCppSettings

    if llama["llamacpp_sequences"] < 2:
        raise UserInputError(
            f"--llamacpp-sequences must be >= 2 (the load-time self-check runs two), got "
            f"{llama['llamacpp_sequences']}"
        )
    settings = LlamaCppSettings(
        model_path=model_file(target),
        sequences=llama["llamacpp_sequences"],
        context_tokens=llama["llamacpp_context"],
        threads=threads,
        exact=name == "llamacpp",
        gpu_layers=llama["llamacpp_gpu_layers"],
    )
    return TargetChoice(name, settings)


def _load_transformers_target(
    config: Any, verbose: bool, say: Callable[[str], None], lossy: bool
) -> LoadedTarget:
    from edgespec.bundled_gguf import cache_dir
    from edgespec.models.gemma_cache import needs_conversion
    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.mask_check_cache import load_checked_target
    from edgespec.runtime.backends.transformers_backend import Numerics

    first = needs_conversion(config.target)
    note = " (first load: dequantizing its GGUF once into a cached fp32 copy)" if first else ""
    say(f"loading the target {config.target}{note}")
    placement = config.placement()
    loaded = load_model(config.target, placement.dtype, verbose=verbose, device=placement.device,
                        with_tokenizer=False)  # the server sees token ids only  # fmt: skip
    model = loaded.model

    numerics: Numerics = "lossy" if lossy else "exact"

    def announce(probing: str | None) -> None:
        if probing is not None:  # why: what changed since the last recorded pass
            say(
                "probing the target's attention masks and checking batched against "
                f"one-at-a-time logits ({numerics} numerics; cached for later starts; "
                f"{probing})"
            )
        else:
            say("attention masks and batch invariance: checked before for these weights, "
                "versions, device, CPU, threads and numerics (cached)")  # fmt: skip

    checked = load_checked_target(model, loaded.weight_files, cache_dir(), announce,
                                  numerics=numerics, probe_progress=ProbeLines(say))  # fmt: skip
    if checked.unrecorded is not None:
        say(f"the checks passed but could not be recorded ({checked.unrecorded}): the next "
            "start checks again")  # fmt: skip
    if not checked.probed:  # the probes' passes warmed it up
        from edgespec.runtime.backends.warm_up import WARM_UP_TOKENS, warm_up

        say(f"warming up the target (one prefill of {WARM_UP_TOKENS} tokens, one decode step)")
        warm_up(checked.target)
    width = int(model.config.get_text_config().hidden_size)
    return LoadedTarget(checked.target, width, model, None)


@dataclass(slots=True)
class ProbeLines:
    """The probe's progress as stage lines (``probing: 200 of 523 one-token passes``), one
    each ``gap_s`` at most and none in its first ``gap_s``: a first start's probe is
    minutes of one stage on a small CPU (Gemma 3's window: 523 passes)."""

    say: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic
    gap_s: float = 5.0
    said_s: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if self.said_s is None:
            self.said_s = now  # the first pass: the stage line was just said
        elif now - self.said_s >= self.gap_s and done < total:
            self.said_s = now
            self.say(f"probing: {done} of {total} one-token passes")


@dataclass(frozen=True, slots=True)
class LoadedTarget:
    """The target backend, its hidden size (for a semantic head), the transformers model
    (``None`` on llama.cpp) and the most sessions it can hold a cache for (``None``: no
    limit of its own)."""

    backend: Any
    hidden_size: int
    model: Any
    max_sessions: int | None


def load_target(
    choice: TargetChoice, config: Any, verbose: bool, say: Callable[[str], None]
) -> LoadedTarget:
    """Load the target ``config`` names on the ``choice`` backend, saying each stage."""
    if choice.llama is None:
        return _load_transformers_target(config, verbose, say, choice.name != "transformers")
    from edgespec.runtime.backends.llamacpp_backend import LlamaCppTarget

    settings = choice.llama
    mode = "exact" if settings.exact else "LOSSY"
    say(
        f"loading the target {config.target} on llama.cpp ({mode}, {settings.sequences} "
        f"sequences × {settings.context_tokens} tokens) and checking batched against "
        "one-at-a-time logits"
    )
    backend = LlamaCppTarget(settings)
    if backend.max_context_tokens != settings.context_tokens:
        say(f"llama.cpp rounds each sequence up to {backend.max_context_tokens} tokens")
    if backend.gpu_note:
        say(backend.gpu_note)
    return LoadedTarget(backend, backend.hidden_size, None, backend.sequences)
