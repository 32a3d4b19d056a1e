"""The libraries' own output while edgespec loads, converts or saves a model: transformers'
and huggingface_hub's progress bars (the GGUF reader's included), transformers' log and
deprecation warnings, silenced unless asked (``verbose``), each setting restored after."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def library_output(verbose: bool) -> Iterator[None]:
    """Within it, unless ``verbose``: no transformers or huggingface_hub progress bars (the
    GGUF conversion's included), transformers' log at errors only, no deprecation or
    future warnings; each setting restored on the way out."""
    if verbose:
        yield
        return
    import importlib

    hf: Any = importlib.import_module("transformers.utils.logging")  # its calls untyped
    bars, level = hf.is_progress_bar_enabled(), hf.get_verbosity()
    hf.disable_progress_bar()
    hf.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            for category in (DeprecationWarning, FutureWarning):
                warnings.simplefilter("ignore", category)
            with _gguf_bar_follows(hf.tqdm):
                yield
    finally:
        hf.set_verbosity(level)
        if bars:
            hf.enable_progress_bar()


@contextmanager
def _gguf_bar_follows(switchable: Any) -> Iterator[None]:
    """transformers' GGUF reader draws its bar with tqdm itself, not with transformers'
    ``switchable`` one: it uses that one meanwhile."""
    import importlib

    try:
        gguf: Any = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except ImportError:  # no GGUF support in this transformers: no such bar
        gguf = None
    own = getattr(gguf, "tqdm", None)
    if own is None:
        yield
        return
    gguf.tqdm = switchable
    try:
        yield
    finally:
        gguf.tqdm = own
