"""``edgespec draft`` refuses a prompt and ``--max-new-tokens`` beyond the target's context
(its server's Health says it) in one line, exit 2, as soon as each is known: the budget
alone and ``--prompt-ids`` before anything loads, a text prompt before the draft loads
when ``--tokenizer`` names its tokenizer, else once the draft (with its own) has. They
were the server's OpenSession refusal, exit 1, after the draft had loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.models import loading
from edgespec.runtime.edge import draft_backends
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.draft_stages import split_stages

CONTEXT = "exceeds the target's context of 4,096 tokens"  # the tiny target's


@pytest.fixture
def address(server: ServerThread) -> str:
    """The loopback server whose target is named by ``model_dir`` (its tokenizer's home)."""
    return f"127.0.0.1:{server.port}"


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{what} was loaded")

    return refuse


@pytest.fixture
def no_draft(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(draft_backends, "load_draft_model", _refuse("the draft"))


@pytest.fixture
def nothing_loads(no_draft: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading, "load_tokenizer", _refuse("a tokenizer"))


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[list[str], str]:
    """The stages said before ``argv`` exits 2, and its one other stderr line."""
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.out == ""
    stages, (line,) = split_stages(out.err)
    return stages, line


@pytest.mark.usefixtures("nothing_loads")
def test_max_new_tokens_beyond_the_context_is_refused_before_anything_loads(
    address: str, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", address, "--draft", str(model_dir), "--prompt", "w1 w2"]
    stages, line = _refused([*argv, "--max-new-tokens", "4096"], capsys)
    assert stages == [f"connecting to {address} ..."]
    assert line == (
        f"edgespec draft: --max-new-tokens (4,096 tokens) + the shortest prompt (1) {CONTEXT}"
    )


@pytest.mark.usefixtures("nothing_loads")
@pytest.mark.parametrize(
    ("num_ids", "flags", "budget"),
    [
        (4000, ["--max-new-tokens", "97"], "--max-new-tokens (97)"),
        (4033, [], "max_new_tokens (64)"),  # the config's default
        (4000, ["--set", "max_new_tokens=97", "--mode", "centralized"], "max_new_tokens (97)"),
    ],
)
def test_prompt_ids_beyond_the_context_are_refused_before_anything_loads(
    num_ids: int,
    flags: list[str],
    budget: str,
    address: str,
    model_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = ",".join(["1"] * num_ids)
    argv = ["draft", "--server", address, "--draft", str(model_dir), "--prompt-ids", ids]
    stages, line = _refused([*argv, *flags], capsys)
    assert stages == [f"connecting to {address} ..."]
    assert line == f"edgespec draft: --prompt-ids ({num_ids:,} tokens) + {budget} {CONTEXT}"


def test_a_prompt_that_fits_exactly_runs(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    """prompt + max_new_tokens == the context is within it (the server's rule too)."""
    argv = ["draft", "--server", address, "--draft", "ngram", "--mode", "centralized"]
    assert main([*argv, "--prompt-ids", ",".join(["1"] * 4094), "--max-new-tokens", "2"]) == 0
    assert split_stages(capsys.readouterr().err)[1][0].startswith("[centralized: 2 tokens, ")


@pytest.mark.usefixtures("no_draft")
def test_a_text_prompt_with_tokenizer_is_refused_before_the_draft_loads(
    address: str, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", address, "--draft", str(model_dir), "--tokenizer", str(model_dir)]
    prompt = " ".join(["w1"] * 4000)
    stages, line = _refused([*argv, "--prompt", prompt, "--max-new-tokens", "97"], capsys)
    assert stages == [f"connecting to {address} ...", f"loading the tokenizer {model_dir} ..."]
    assert line == f"edgespec draft: --prompt (4,000 tokens) + --max-new-tokens (97) {CONTEXT}"


def test_a_text_prompt_with_the_drafts_tokenizer_is_refused_before_the_first_round(
    address: str, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The draft brings its tokenizer: the prompt is checked as soon as it is tokenized."""
    argv = ["draft", "--server", address, "--draft", str(model_dir)]
    prompt = " ".join(["w1"] * 4000)
    stages, line = _refused([*argv, "--prompt", prompt, "--max-new-tokens", "97"], capsys)
    assert stages == [f"connecting to {address} ...", f"loading the draft {model_dir} ..."]
    assert line == f"edgespec draft: --prompt (4,000 tokens) + --max-new-tokens (97) {CONTEXT}"
