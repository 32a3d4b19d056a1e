"""``edgespec draft`` refuses a draft that takes fewer token ids than the server's target,
or has more (``check_draft_vocab``, shared with ``edgespec drafting-server`` and ``serve
--draft``): exit 2, one line, before
any token is drafted, in every mode that loads the draft (``--compare`` and
``--serve-openai`` too; it used to print three tokens, then die with ``IndexError: index
out of range in self``, or ``llama_decode failed with code -1`` on llama.cpp). A trimmed
draft, whose kept-token map takes every target id, is still accepted."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from edgespec.cli import main
from edgespec.models.trimmed import TrimmedDraftConfig, TrimmedVocabDraft
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.draft_backends import draft_input_vocab
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.backends.llamacpp_fixtures import tiny_gguf
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.commands.processes import Command
from tests.runtime.conftest import start_server
from tests.word_tokenizer import make_word_tokenizer

TARGET_VOCAB = 128
PROMPT = (1, 2, 3)


@pytest.fixture(scope="module")
def wide_target() -> TransformersTarget:
    """A target of 128 tokens: its greedy output leaves the 64-token drafts' vocabulary."""
    return TransformersTarget(tiny_llama(seed=1, vocab_size=TARGET_VOCAB))


@pytest.fixture
def wide_server(wide_target: TransformersTarget) -> Iterator[ServerThread]:
    running = start_server(wide_target, host="127.0.0.1")
    yield running
    running.stop(grace_s=0)


@pytest.fixture(scope="module")
def narrow_draft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("narrow-draft")
    tiny_llama(seed=5, vocab_size=64).save_pretrained(directory)
    make_word_tokenizer(64).save_pretrained(directory)  # what the endpoint needs
    return directory


def _refused(name: object, num_ids: int = 64) -> str:
    return (
        f"edgespec draft: --draft: {name} has a vocabulary of {num_ids} tokens, "
        f"the server's target {TARGET_VOCAB}: the draft must take every target token id "
        "(share the target's tokenizer)"
    )


def _draft(server: ServerThread, draft: object, *flags: str) -> list[str]:
    return ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft),
            "--prompt-ids", "1,2,3", "--max-new-tokens", "12", *flags]  # fmt: skip


def test_the_target_leaves_the_drafts_vocabulary(wide_target: TransformersTarget) -> None:
    """What made the old runs die: a target token the 64-token drafts cannot take."""
    assert max(target_greedy_decode(wide_target, PROMPT, 12)) >= 64


@pytest.mark.parametrize("flags", [(), ("--compare",)])
def test_a_narrower_draft_is_refused_before_any_token(
    wide_server: ServerThread, narrow_draft: Path, capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
) -> None:  # fmt: skip
    assert main(_draft(wide_server, narrow_draft, *flags)) == 2
    out = capsys.readouterr()
    assert out.out == ""  # no token drafted or shown, not even the centralized run's
    assert split_stages(out.err)[1] == [_refused(narrow_draft)]


def test_the_endpoint_refuses_it_before_it_serves(
    wide_server: ServerThread, narrow_draft: Path, tmp_path: Path
) -> None:
    """In a process of its own (the old code served, its first request crashing): exit 2
    within the bound, one line, nothing listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    command = Command(["draft", "--server", f"127.0.0.1:{wide_server.port}", "--draft",
                       str(narrow_draft), "--serve-openai", address], tmp_path / "err")  # fmt: skip
    assert command.stopped(timeout_s=60) == 2
    assert split_stages(command.log.read_text())[1] == [_refused(narrow_draft)]


def test_a_narrower_llamacpp_draft_is_refused_before_any_token(
    wide_server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("llama_cpp")
    gguf = tiny_gguf(0)  # 64 tokens
    assert main(_draft(wide_server, gguf, "--backend", "llamacpp")) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert split_stages(out.err)[1] == [_refused(gguf)]


def _trimmed(directory: Path) -> Path:
    """A trimmed draft keeping 5 of the target's 128 ids (4 output rows + "other")."""
    config = TrimmedDraftConfig(
        draft_token_ids=[1, 3, 5, 70], vocab_size=TARGET_VOCAB, hidden_size=32,
        intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, bos_token_id=None, pad_token_id=None, eos_token_id=None,
    )  # fmt: skip
    torch.manual_seed(0)
    TrimmedVocabDraft(config).save(directory)
    return directory


def test_a_trimmed_draft_is_still_accepted(
    wide_server: ServerThread, wide_target: TransformersTarget, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Its head outputs 4 ids, but its inputs take all 128: a lossless run to the end."""
    draft = _trimmed(tmp_path / "trimmed")
    assert main(_draft(wide_server, draft)) == 0
    shown = [int(t) for t in re.findall(r"\d+", capsys.readouterr().out)]
    assert shown == list(target_greedy_decode(wide_target, PROMPT, 12))
    assert max(shown) >= 64  # ids its head cannot output, fed back in
    assert main(_draft(wide_server, draft, "--compare")) == 0  # exit 1 if outputs differ


def test_the_bundled_trimmed_draft_takes_every_gemma_target_id() -> None:
    """gemma3-270m-draft (built on the meta device: no weights): its head keeps 8,192 ids,
    its inputs take the Gemma 3 target's 262,144 (edgespec/data/models/gemma3-270m.yaml)."""
    data = Path(__file__).parents[3] / "edgespec/data"
    target = yaml.safe_load((data / "models/gemma3-270m.yaml").read_text())
    directory = data / "drafts/gemma3-270m-draft"
    config: Any = TrimmedDraftConfig.from_pretrained(str(directory))
    with torch.device("meta"):
        draft = TrimmedVocabDraft(config)
    assert draft.num_kept == 8192
    assert draft_input_vocab(draft) == target["vocab_size"] == 262144


def test_a_wider_draft_is_refused_before_any_token(
    wide_server: ServerThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 256-token draft of the 128-token target: its first draft token past 127 was refused
    by the server (INVALID_ARGUMENT) after the draft loaded, the run exit 1."""
    directory = tmp_path / "wider"
    tiny_llama(seed=5, vocab_size=2 * TARGET_VOCAB).save_pretrained(directory)
    capsys.readouterr()  # the save's progress bar
    assert main(_draft(wide_server, directory)) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert split_stages(out.err)[1] == [
        f"edgespec draft: --draft: {directory} has a vocabulary of {2 * TARGET_VOCAB} tokens, "
        f"the server's target {TARGET_VOCAB}: it would draft ids the target does not have "
        "(share the target's tokenizer)"
    ]
