"""``edgespec bench serve --draft`` with a draft that takes fewer token ids than the
server's target: refused when its client processes load it (``check_draft_vocab``, as
``edgespec draft`` and ``serve --draft`` refuse it), one line naming ``--draft``, exit 2.
It ran, and every request whose target output passed the draft's vocabulary failed with
``IndexError`` in the client."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.runtime.testing import tiny_llama
from tests.runtime.commands.test_draft_vocab import TARGET_VOCAB
from tests.word_tokenizer import make_word_tokenizer

pytest.importorskip("torch")
pytest.importorskip("grpc")


@pytest.mark.timeout(180)
def test_a_narrower_draft_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, draft = tmp_path / "wide", tmp_path / "narrow"
    tiny_llama(seed=1, vocab_size=TARGET_VOCAB).save_pretrained(target)
    make_word_tokenizer(TARGET_VOCAB).save_pretrained(target)
    tiny_llama(seed=5, vocab_size=64).save_pretrained(draft)
    out = tmp_path / "r.json"
    rc = main(["bench", "serve", "--target", str(target), "--draft", str(draft), "--clients",
               "1", "--procs", "1", "--duration-s", "1", "--max-new-tokens", "8", "--json",
               str(out)])  # fmt: skip
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec bench serve: client process 0 could not start: --draft: {draft} has a "
        f"vocabulary of 64 tokens, the server's target {TARGET_VOCAB}: the draft must take "
        "every target token id (share the target's tokenizer)"
    )
    assert rc == 2 and not out.exists()
