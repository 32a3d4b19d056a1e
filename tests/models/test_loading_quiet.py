"""A model load prints none of the libraries' progress bars or warnings unless asked
(edgespec.models.library_output.library_output); their settings are as before afterwards."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers.utils import logging as hf_logging

from edgespec.models.library_output import library_output
from edgespec.models.loading import load_model
from edgespec.runtime.testing import tiny_llama


@pytest.fixture
def saved(tmp_path: Path) -> str:
    tiny_llama(seed=0).save_pretrained(str(tmp_path / "m"))
    return str(tmp_path / "m")


def test_a_load_shows_the_weights_bar_only_when_verbose(
    saved: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    load_model(saved)
    assert "Loading weights" not in capsys.readouterr().err
    load_model(saved, verbose=True)
    assert "Loading weights" in capsys.readouterr().err


def test_the_libraries_settings_are_restored() -> None:
    from transformers import modeling_gguf_pytorch_utils as gguf

    own_bar = gguf.tqdm  # type: ignore[attr-defined]
    before = (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity())
    with library_output(verbose=False):
        assert not hf_logging.is_progress_bar_enabled()
        assert hf_logging.get_verbosity() == logging.ERROR
        assert gguf.tqdm is hf_logging.tqdm  # type: ignore[attr-defined]  # the GGUF bar too
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("deprecated", FutureWarning, stacklevel=1)
            warnings.warn("deprecated", DeprecationWarning, stacklevel=1)
        assert caught == []
    assert (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()) == before
    assert gguf.tqdm is own_bar  # type: ignore[attr-defined]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("deprecated", FutureWarning, stacklevel=1)
    assert [w.category for w in caught] == [FutureWarning]
