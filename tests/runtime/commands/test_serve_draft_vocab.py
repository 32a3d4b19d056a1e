"""``edgespec serve --draft`` refuses a co-located draft that takes fewer token ids than its
target (``check_draft_vocab``, shared with ``edgespec draft`` and ``drafting-server``):
exit 2, one line naming ``--draft``, before the server listens. It used to serve, and its
first fused round died on the target's first token outside the draft's vocabulary
(``INTERNAL: Generate failed on the server: IndexError('index out of range in self')``).
A trimmed draft, whose kept-token map takes every target id, is still served."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.commands.processes import Command
from tests.runtime.commands.test_draft_vocab import PROMPT, TARGET_VOCAB, _trimmed
from tests.word_tokenizer import make_word_tokenizer

STAGE = re.compile(r"edgespec serve: \[ *\d+\.\d s\] .*")


@pytest.fixture(scope="module")
def wide_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A target of 128 tokens (test_draft_vocab's: its greedy output passes id 63)."""
    directory = tmp_path_factory.mktemp("wide-target")
    tiny_llama(seed=1, vocab_size=TARGET_VOCAB).save_pretrained(directory)
    make_word_tokenizer(TARGET_VOCAB).save_pretrained(directory)
    return directory


def _serve(target: Path, draft: Path, log: Path) -> Command:
    return Command(["serve", "--target", str(target), "--draft", str(draft), "--port", "0"], log)


def test_a_narrower_draft_is_refused_before_the_server_listens(
    wide_target: Path, tmp_path: Path
) -> None:
    draft = tmp_path / "narrow"
    tiny_llama(seed=5, vocab_size=64).save_pretrained(draft)
    command = _serve(wide_target, draft, tmp_path / "err")
    assert command.stopped(timeout_s=60) == 2
    lines = [line for line in command.lines if not STAGE.fullmatch(line)]
    assert lines == [
        f"edgespec serve: --draft: {draft} has a vocabulary of 64 tokens, the server's "
        f"target {TARGET_VOCAB}: the draft must take every target token id (share the "
        "target's tokenizer)"
    ]
    assert "listening" not in command.out.read_text()


def test_a_trimmed_draft_is_still_served(wide_target: Path, tmp_path: Path) -> None:
    """Its head outputs 4 ids, but its inputs take all 128: fused rounds run to the end,
    the target's own greedy output."""
    command = _serve(wide_target, _trimmed(tmp_path / "trimmed"), tmp_path / "err")
    try:
        port = command.wait_for(r"listening on 127\.0\.0\.1:(\d+)", stdout=True).group(1)
        out = tmp_path / "draft.out"
        fused = Command(["draft", "--server", f"127.0.0.1:{port}", "--mode", "fused",
                         "--prompt-ids", "1,2,3", "--max-new-tokens", "12"], out)  # fmt: skip
        assert fused.stopped(timeout_s=120) == 0, fused.log.read_text()
        shown = [int(t) for t in re.findall(r"\d+", fused.out.read_text().splitlines()[0])]
        target = TransformersTarget(tiny_llama(seed=1, vocab_size=TARGET_VOCAB))
        assert shown == list(target_greedy_decode(target, PROMPT, 12))
        assert max(shown) >= 64  # ids the trimmed head cannot output, fed back in
    finally:
        command.process.send_signal(signal.SIGINT)
        command.stopped(timeout_s=60)
