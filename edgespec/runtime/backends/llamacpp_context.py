"""One llama.cpp context through llama-cpp-python's low-level API, in the exact
(batch-invariant) configuration of issue 39.

Exact means: a token's logits are the same bits whether it is decoded alone, in a
multi-token block or beside other sequences. That takes the wheel ``make`` builds
(``-DGGML_LLAMAFILE=OFF``, tools/build_llamacpp_wheel.sh) and, at load, no weight repacking
(``use_extra_bufts=False``), the tiled CPU matmul off (environment ``GGML_CPU_TILED_MM=0``,
read by ggml once per process at its first matrix product: it is set for the first decode
of the process only, then the environment is put back), flash attention off, one KV
stream per sequence
(``kv_unified=False``) and the full sliding-window cache (``swa_full=True``, which also lets
a rejected draft be trimmed off a sliding-window model). The lossy mode keeps the last two
(per-sequence trimming needs them) and no repacking (on an AMX CPU its kernels die with
SIGILL on a multi-token batch), and leaves the tiled matmul and flash attention at
llama.cpp's defaults.

A :class:`LlamaContext` holds one model and one context of ``sequences`` sequences of
``context_tokens`` cells each; :meth:`LlamaContext.decode` runs one list of (token,
position, sequence, wants-logits) entries through ``llama_decode`` in batches of at most
``batch_tokens`` and returns the logits rows asked for. It is not thread-safe: each backend
drives its context from one thread at a time (its own lock).
"""

from __future__ import annotations

import ctypes
import importlib
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.errors import UserInputError
from edgespec.models.gguf_file import declared_stop_ids, gguf_problem, unusable_gguf
from edgespec.runtime.backends.exactness import InexactBackendError
from edgespec.runtime.backends.llamacpp_checks import check_settings, gpu_layers_note

TILED_MM_ENV = "GGML_CPU_TILED_MM"
INSTALL_HINT = (
    "run `make` (it builds llama-cpp-python 0.3.36 once in the exact configuration and "
    "installs it: tools/build_llamacpp_wheel.sh)"
)


class LlamaCppUnavailableError(UserInputError):
    """llama-cpp-python is not installed, or the model file cannot be loaded."""


class InexactSettingError(InexactBackendError, UserInputError):
    """The environment asks for kernels the exact configuration cannot use: a setting to
    change (one line, exit 2), not a model that failed its self-check."""


@dataclass(frozen=True, slots=True)
class LlamaCppSettings:
    """How a llama.cpp context is made: ``sequences`` KV sequences of ``context_tokens``
    cells each (the KV memory is their product), ``batch_tokens`` per ``llama_decode``,
    ``threads`` (``None``: llama.cpp's default); ``exact``: the batch-invariant
    configuration (else the lossy one, llama.cpp's faster defaults); ``gpu_layers``: layers
    offloaded to a GPU (a wheel built with a GPU backend, docs/RUNTIME.md; 0: the CPU only; a
    CPU-only build keeps every layer on the CPU whatever it says). The self-check at load
    judges whichever device runs the layers."""

    model_path: Path
    sequences: int = 16
    context_tokens: int = 2048
    batch_tokens: int = 512
    threads: int | None = None
    exact: bool = True
    gpu_layers: int = 0

    def __post_init__(self) -> None:
        for name in ("sequences", "context_tokens", "batch_tokens"):
            if getattr(self, name) < 1:
                raise UserInputError(f"llama.cpp {name} must be >= 1, got {getattr(self, name)}")
        if self.gpu_layers < 0:
            raise UserInputError(f"llama.cpp gpu_layers must be >= 0, got {self.gpu_layers}")
        if self.threads is not None and self.threads < 1:
            raise UserInputError(f"llama.cpp threads must be >= 1, got {self.threads}")


Entry = tuple[int, int, int, bool]
"""(token id, position, sequence id, wants logits) of one token in a decode."""


def import_llama_cpp(exact: bool) -> ModuleType:
    """llama-cpp-python's low-level module; when ``exact``, ``GGML_CPU_TILED_MM`` must be
    unset or 0 (another value would flip logits)."""
    given = os.environ.get(TILED_MM_ENV)
    if exact and given not in (None, "0"):
        raise InexactSettingError(
            f"{TILED_MM_ENV}={given} is set; the exact llama.cpp configuration needs 0 "
            "(unset it, or choose the lossy backend by name)"
        )
    try:
        return importlib.import_module("llama_cpp.llama_cpp")
    except ImportError as exc:
        raise LlamaCppUnavailableError(
            f"the llamacpp backend needs llama-cpp-python ({exc}); {INSTALL_HINT}"
        ) from None


_QUIET: Any = None  # the log callback (kept alive: llama.cpp holds a pointer to it)
_INITIALISED = False
_LATCHED = False  # ggml has read GGML_CPU_TILED_MM (at this process's first matrix product)


def _init_backend(lib: ModuleType) -> None:
    """``llama_backend_init`` once per process, llama.cpp's own log silenced."""
    global _INITIALISED, _QUIET
    if _INITIALISED:
        return
    _QUIET = lib.llama_log_callback(lambda level, text, data: None)
    lib.llama_log_set(_QUIET, ctypes.c_void_p(0))
    lib.llama_backend_init()
    _INITIALISED = True


def _refusal(path: Path) -> str:
    """Why llama.cpp could not load the file ``path``: what is wrong with it, else that it
    reads whole but is no model llama.cpp knows."""
    problem = gguf_problem(path)
    if problem is not None:
        return unusable_gguf(path, problem)
    return f"llama.cpp cannot load {str(path)!r} (not a GGUF model it knows)"


def _free(lib: ModuleType, batch: Any, ctx: Any, model: Any) -> None:
    lib.llama_batch_free(batch)
    lib.llama_free(ctx)
    lib.llama_model_free(model)


class LlamaContext:
    """One llama.cpp model and context (see the module docstring)."""

    def __init__(self, settings: LlamaCppSettings, served: bool = False) -> None:
        """``served``: a server's target, whose context a flag sets (checked at load)."""
        self.settings, self._lib = settings, (lib := import_llama_cpp(settings.exact))
        _init_backend(lib)
        if not settings.model_path.is_file():
            raise LlamaCppUnavailableError(f"model file {str(settings.model_path)!r} not found")
        model_params = lib.llama_model_default_params()
        # No weight repacking, in either mode: it is not batch-invariant, and on an AMX CPU
        # (this project's machine) its kernels die with SIGILL on a multi-token batch.
        model_params.use_extra_bufts = False
        model_params.n_gpu_layers = settings.gpu_layers
        self._model = lib.llama_model_load_from_file(
            str(settings.model_path).encode(), model_params
        )
        if not self._model:
            raise LlamaCppUnavailableError(_refusal(settings.model_path))
        if served:
            check_settings(lib, self._model, settings.context_tokens)
        self.gpu_note = gpu_layers_note(lib, settings.gpu_layers)  # serve says it
        params = lib.llama_context_default_params()
        params.n_ctx = settings.sequences * settings.context_tokens
        params.n_batch = params.n_ubatch = settings.batch_tokens
        params.n_seq_max = settings.sequences
        if settings.threads is not None:
            params.n_threads = params.n_threads_batch = settings.threads
        params.kv_unified = False  # one KV stream per sequence: trimmed and sized alone
        params.swa_full = True  # the whole window history: a rejected draft can be cut off
        params.pooling_type = lib.LLAMA_POOLING_TYPE_NONE
        if settings.exact:
            params.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self._ctx = lib.llama_init_from_model(self._model, params)
        if not self._ctx:
            lib.llama_model_free(self._model)
            raise LlamaCppUnavailableError(
                f"llama.cpp cannot make a context of {settings.sequences} × "
                f"{settings.context_tokens} tokens for {str(settings.model_path)!r}"
            )
        self._memory = lib.llama_get_memory(self._ctx)
        vocab = lib.llama_model_get_vocab(self._model)
        self._vocab = vocab
        self.vocab_size = int(lib.llama_vocab_n_tokens(vocab))
        self.hidden_size = int(lib.llama_model_n_embd(self._model))
        self.context_tokens = int(lib.llama_n_ctx_seq(self._ctx))
        self.trained_context_tokens = int(lib.llama_model_n_ctx_train(self._model))  # 0: unsaid
        self.eos_token_ids = declared_stop_ids(self._metadata_int)  # not llama_vocab_eot's guess
        self._batch = lib.llama_batch_init(settings.batch_tokens, 0, 1)
        self._embeddings = False
        self._free = weakref.finalize(self, _free, lib, self._batch, self._ctx, self._model)
        if settings.exact:
            self._latch_tiled_matmul_off()

    def _metadata_int(self, key: str) -> int | None:
        """The model's integer metadata value of ``key``, ``None`` when it has none."""
        buffer = ctypes.create_string_buffer(32)
        size = self._lib.llama_model_meta_val_str(self._model, key.encode(), buffer, 32)
        return int(buffer.value) if size > 0 and buffer.value.isdigit() else None

    def _latch_tiled_matmul_off(self) -> None:
        """ggml reads ``GGML_CPU_TILED_MM`` once per process, at its first matrix product:
        set it to 0 for a one-token decode and put the environment back as it was, so no
        child process inherits it. After a lossy context made first, nothing changes here
        (the self-check then finds the difference)."""
        global _LATCHED
        if _LATCHED:
            return
        before = os.environ.get(TILED_MM_ENV)
        os.environ[TILED_MM_ENV] = "0"
        try:
            self.decode([(0, 0, 0, False)])
            self.trim(0, 0)
        finally:
            if before is None:
                del os.environ[TILED_MM_ENV]
            else:
                os.environ[TILED_MM_ENV] = before
        _LATCHED = True

    def close(self) -> None:
        """Free the batch, the context and the model now (also done when the object is
        collected); the object is unusable after."""
        self._free()

    @property
    def closed(self) -> bool:
        return not self._free.alive

    def _check_open(self) -> None:
        """A ``RuntimeError`` once closed: llama.cpp's calls on freed memory crash the
        process (a trim or a size read segfaulted)."""
        if self.closed:
            raise RuntimeError("the llama.cpp context is closed")

    def decode(
        self, entries: Sequence[Entry], hidden: bool = False
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | None]:
        """Decode ``entries`` in order; (logits rows of the entries that want them, in
        order, float32; with ``hidden``, the last-layer hidden states of the same rows).
        Raises ``RuntimeError`` when llama.cpp refuses a batch (cells full)."""
        global _LATCHED
        _LATCHED = True
        self._check_open()
        lib, size = self._lib, self.settings.batch_tokens
        if hidden != self._embeddings:
            lib.llama_set_embeddings(self._ctx, hidden)
            self._embeddings = hidden
        rows: list[npt.NDArray[np.float32]] = []
        states: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(entries), size):
            chunk = entries[start : start + size]
            batch = self._batch
            outputs = []
            for i, (token, pos, seq, wanted) in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = pos
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq
                batch.logits[i] = wanted
                if wanted:
                    outputs.append(i)
            batch.n_tokens = len(chunk)
            code = lib.llama_decode(self._ctx, batch)
            if code != 0:
                raise RuntimeError(f"llama_decode failed with code {code} on {len(chunk)} tokens")
            for i in outputs:
                rows.append(self._row(lib.llama_get_logits_ith(self._ctx, i), self.vocab_size))
                if hidden:
                    state = lib.llama_get_embeddings_ith(self._ctx, i)
                    states.append(self._row(state, self.hidden_size))
        logits = np.stack(rows) if rows else np.zeros((0, self.vocab_size), np.float32)
        return logits, (np.stack(states) if hidden and states else None)

    @staticmethod
    def _row(pointer: Any, width: int) -> npt.NDArray[np.float32]:
        if not pointer:
            raise RuntimeError("llama.cpp returned no output row")
        return np.ctypeslib.as_array(pointer, shape=(width,)).astype(np.float32, copy=True)

    def trim(self, seq: int, keep: int) -> None:
        """Drop sequence ``seq``'s cells from position ``keep`` on (all of them at 0)."""
        self._check_open()
        if not self._lib.llama_memory_seq_rm(self._memory, seq, keep, -1):
            raise RuntimeError(f"llama.cpp could not trim sequence {seq} to {keep} tokens")

    def sequence_bytes(self, seq: int) -> int:
        """The bytes llama.cpp would save for sequence ``seq`` (its KV cells and a header)."""
        self._check_open()
        return int(self._lib.llama_state_seq_get_size(self._ctx, seq))
