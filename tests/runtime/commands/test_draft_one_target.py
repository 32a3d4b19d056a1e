"""``edgespec draft --prompt-ids`` over several servers of different targets is refused
before anything loads, in the endpoint's words (each server named with its target and
vocabulary), exit 2: routing may send the prompt to any. It ran on whichever routing
picked, without complaint, while the endpoint refused the same servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.conftest import start_server


@pytest.fixture
def other(target: TransformersTarget) -> Iterator[ServerThread]:
    """A loopback server of the same weights under another target name."""
    running = start_server(target, target="other-model", host="127.0.0.1")
    yield running
    running.stop(grace_s=0)


@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_servers_of_different_targets_are_refused_naming_each(
    mode: str, server: ServerThread, other: ServerThread, model_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    first, second = f"127.0.0.1:{server.port}", f"127.0.0.1:{other.port}"
    argv = ["draft", "--server", f"{first},{second}", "--draft", "ngram", "--mode", mode,
            "--prompt-ids", "1,2,3"]  # fmt: skip
    assert main(argv) == 2
    out = capsys.readouterr()
    stages, lines = split_stages(out.err)
    assert (out.out, stages) == ("", [f"connecting to {first}, {second} ..."])
    assert lines == [
        f"edgespec draft: --server: the servers serve different targets ({first} {model_dir} "
        f"of 64 tokens, {second} other-model of 64 tokens); routing may send the prompt to "
        "any: give servers of one target"
    ]


def test_servers_of_one_target_run(
    server: ServerThread, model_dir: Path, target: TransformersTarget,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    same = start_server(target, target=str(model_dir), host="127.0.0.1")
    try:
        argv = ["draft", "--server", f"127.0.0.1:{server.port},127.0.0.1:{same.port}",
                "--draft", "ngram", "--mode", "centralized", "--prompt-ids", "1,2,3",
                "--max-new-tokens", "2"]  # fmt: skip
        assert main(argv) == 0
    finally:
        same.stop(grace_s=0)
    assert split_stages(capsys.readouterr().err)[1][-1].startswith("[centralized: 2 tokens, ")
