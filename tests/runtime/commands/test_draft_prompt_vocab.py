"""``edgespec draft`` refuses ``--prompt-ids`` with an id outside the target's vocabulary
(its server's Health says its size) before anything loads, and a ``--prompt`` that
tokenizes to no tokens as soon as it is tokenized: one line naming the flag, exit 2. Both
were the server's OpenSession refusal, exit 1, after the draft had loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.test_draft_context import (  # noqa: F401  (fixtures)
    _refused,
    no_draft,
    nothing_loads,
)

NO_TOKENS = "--prompt: '' tokenizes to no tokens: give a prompt of at least one token"


@pytest.fixture
def address(server: ServerThread) -> str:
    """The loopback server of the tiny target (a vocabulary of 64)."""
    return f"127.0.0.1:{server.port}"


@pytest.mark.usefixtures("nothing_loads")
@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_prompt_ids_outside_the_vocabulary_are_refused_before_anything_loads(
    mode: str, address: str, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", address, "--draft", str(model_dir), "--mode", mode]
    stages, line = _refused([*argv, "--prompt-ids", "1,2,63,64,900"], capsys)
    assert stages == [f"connecting to {address} ..."]
    assert line == (
        "edgespec draft: --prompt-ids: token 3 (id 64) is outside the target's vocabulary [0, 64)"
    )


@pytest.mark.usefixtures("no_draft")
def test_a_prompt_of_no_tokens_is_refused_before_the_draft_loads(
    address: str, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", address, "--draft", str(model_dir), "--tokenizer", str(model_dir)]
    stages, line = _refused([*argv, "--prompt", ""], capsys)
    assert stages == [f"connecting to {address} ...", f"loading the tokenizer {model_dir} ..."]
    assert line == f"edgespec draft: {NO_TOKENS}"
