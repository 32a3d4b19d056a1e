"""A token the server does not take is said as ``edgespec draft`` starts, before the draft
loads, in one line, exit 2: ``--prompt`` loaded the draft (seconds) before it reported
UNAUTHENTICATED (exit 1), and ``--serve-openai`` started healthy, then answered every
request 502 and logged nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server


@pytest.fixture
def guarded(target: TransformersTarget, model_dir: Path) -> Iterator[ServerThread]:
    """A loopback server that takes the token ``tok-now`` alone."""
    running = start_server(target, target=str(model_dir), host="127.0.0.1",
                           auth_tokens=["tok-now"])  # fmt: skip
    yield running
    running.stop(grace_s=0)


@pytest.mark.parametrize(
    "run", [["--prompt", "w5 w6 w7"], ["--serve-openai", "127.0.0.1:0"]], ids=["prompt", "openai"]
)
@pytest.mark.parametrize(
    ("token", "said"),
    [
        (["--auth-token", "tok-revoked"],
         "--auth-token: the server {address} does not take it (UNAUTHENTICATED: invalid auth "
         "token)"),
        ([], "the server {address} needs an auth token (UNAUTHENTICATED: missing auth token): "
             "give --auth-token"),
    ],
    ids=["wrong", "none"],
)  # fmt: skip
def test_a_token_the_server_refuses_is_one_line_before_the_draft_loads(
    guarded: ServerThread, model_dir: Path, run: list[str], token: list[str], said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    address = f"127.0.0.1:{guarded.port}"
    argv = ["draft", "--server", address, "--draft", str(model_dir), *token, *run]
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("] ", 1)[1] for line in lines[:-1]] == [f"connecting to {address} ..."]
    assert lines[-1] == f"edgespec draft: {said.format(address=address)}"


def test_the_token_the_server_takes_passes(
    guarded: ServerThread, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", f"127.0.0.1:{guarded.port}", "--draft", str(model_dir),
            "--auth-token", "tok-now", "--prompt-ids", "5,6,7",
            "--max-new-tokens", "4"]  # fmt: skip
    assert main(argv) == 0
    assert capsys.readouterr().err.splitlines()[-1].startswith("[distributed: 4 tokens")


class _NeverStarts:
    """In place of the endpoint's server: it would serve here, the token unchecked."""

    def __init__(self, *args: object) -> None:
        pass

    def start(self) -> None:
        raise OSError("the endpoint started")


def test_an_endpoint_over_several_servers_checks_the_token_with_each(
    guarded: ServerThread, server: ServerThread, model_dir: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Routing took the server that refused the token for one that did not answer, and the
    endpoint started over both: each request routed there was a 502."""
    from edgespec.runtime.openai_api import serve

    monkeypatch.setattr(serve, "ApiThread", _NeverStarts)
    refusing, taking = f"127.0.0.1:{guarded.port}", f"127.0.0.1:{server.port}"
    argv = ["draft", "--server", taking, "--server", refusing, "--auth-token", "tok-other",
            "--draft", str(model_dir), "--serve-openai", "127.0.0.1:0"]  # fmt: skip
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec draft: --auth-token: the server {refusing} does not take it "
        "(UNAUTHENTICATED: invalid auth token)"
    )


def test_a_prompt_over_several_servers_says_which_one_refuses_the_token(
    guarded: ServerThread, server: ServerThread, model_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """It said ``server X did not answer`` and drafted against the other one, exit 0."""
    refusing, taking = f"127.0.0.1:{guarded.port}", f"127.0.0.1:{server.port}"
    argv = ["draft", "--server", taking, "--server", refusing, "--auth-token", "tok-other",
            "--draft", str(model_dir), "--prompt-ids", "5,6,7",
            "--max-new-tokens", "4"]  # fmt: skip
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert not any("did not answer" in line for line in lines)
    assert lines[-1] == (f"edgespec draft: --auth-token: the server {refusing} does not take "
                         "it (UNAUTHENTICATED: invalid auth token)")  # fmt: skip


def test_a_prompt_over_servers_that_all_refuse_the_token_is_told_at_once(
    guarded: ServerThread, target: TransformersTarget, model_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Routing waited ``--retry-timeout-s`` for a server to answer, then said none of them
    answered (UNAVAILABLE, with the hint to start one), exit 1."""
    other = start_server(target, target=str(model_dir), host="127.0.0.1",
                         auth_tokens=["tok-now"])  # fmt: skip
    first, second = f"127.0.0.1:{guarded.port}", f"127.0.0.1:{other.port}"
    argv = ["draft", "--server", first, "--server", second, "--draft", str(model_dir),
            "--prompt-ids", "5,6,7", "--retry-timeout-s", "20"]  # fmt: skip
    start = time.monotonic()
    try:
        assert main(argv) == 2
    finally:
        other.stop(grace_s=0)
    assert time.monotonic() - start < 10  # was the whole 20 s, then exit 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec draft: the server {first} needs an auth token (UNAUTHENTICATED: missing "
        "auth token): give --auth-token"
    )
