"""``train wisv-data`` refuses what would waste or spoil a capture: a draft of another
vocabulary than the target's, in one line once both are loaded (it ended in a traceback,
``IndexError``, with a store already tied to that draft), and a rollout flag without
``--rollout-head`` (ignored: the capture was lossless)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.testing import noisy_copy, tiny_llama
from tests.learn.wisv.test_data_command import ARTICLES, CharTokenizer


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_model`` answers ``tiny-target`` (64 ids), ``tiny-draft`` (its noisy copy),
    ``narrow`` (32 ids) and ``wide`` (128 ids); three GSM8K-like train prompts."""
    target = tiny_llama(seed=0)
    found = {
        "tiny-target": target,
        "tiny-draft": noisy_copy(target, 0.3),
        "narrow": tiny_llama(seed=1, num_layers=1, vocab_size=32),
        "wide": tiny_llama(seed=1, num_layers=1, vocab_size=128),
    }

    def load_model(name: str, **_: Any) -> SimpleNamespace:
        return SimpleNamespace(model=found[name], tokenizer=CharTokenizer())

    monkeypatch.setattr("edgespec.models.loading.load_model", load_model)
    (tmp_path / "gsm8k_train.jsonl").write_text(
        "".join(json.dumps({"prompt": text}) + "\n" for text in ARTICLES)
    )
    monkeypatch.setenv("EDGESPEC_PROMPTS", str(tmp_path))


def _capture(out: Path, draft: str, *extra: str) -> int:
    return main([
        "train", "wisv-data", "--out", str(out), "--target", "tiny-target", "--draft", draft,
        "--prompts", "1", "--gamma", "4", "--max-new-tokens", "8", "--max-prompt-tokens", "16",
        *extra,
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("draft", "message"),
    [
        ("wide", "--draft wide has a vocabulary of 128 tokens, the target 64: it would draft "
         "ids the target does not have (share the target's tokenizer)"),
        ("narrow", "--draft narrow has a vocabulary of 32 tokens, the server's target 64: the "
         "draft must take every target token id (share the target's tokenizer)"),
    ],
)  # fmt: skip
def test_a_draft_of_another_vocabulary_is_refused_and_the_out_stays_free(
    tmp_path: Path, models: None, capsys: pytest.CaptureFixture[str], draft: str, message: str
) -> None:
    out = tmp_path / "d.npz"
    assert _capture(out, draft) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"edgespec train wisv-data: {message}"
    assert not (tmp_path / "d.parts").exists()  # no store tied to that draft
    assert _capture(out, "tiny-draft") == 0  # the same --out with the target's draft
    assert json.loads((tmp_path / "d.parts" / "run.json").read_text())["draft"] == "tiny-draft"


@pytest.mark.parametrize(
    "flags", [("--threshold", "5"), ("--rollout-channel", "good"), ("--seed", "3")]
)
def test_a_rollout_flag_without_a_head_is_refused(
    tmp_path: Path, models: None, capsys: pytest.CaptureFixture[str], flags: tuple[str, str]
) -> None:
    assert _capture(tmp_path / "d.npz", "tiny-draft", *flags) == 2
    assert capsys.readouterr().err == (
        f"edgespec train wisv-data: {flags[0]} sets the rollout, which only --rollout-head "
        f"runs: give --rollout-head HEAD too, or leave {flags[0]} out\n"
    )
    assert not (tmp_path / "d.parts").exists()
