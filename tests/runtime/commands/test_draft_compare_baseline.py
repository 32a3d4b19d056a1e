"""``edgespec draft --compare`` names the baseline its speed-up is over: the server's
numerics, as its Health says them (an exact server with the line on what its padded
passes cost; a lossy one; an older server that does not say, with no claim about
kernels), and the Health field itself."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.conftest import start_server

NUMBERS = r"speed-up: \d+\.\d\dx \(distributed \d+\.\d tok/s over centralized \d+\.\d tok/s"
EXACT_NOTE = (
    "baseline: the exact kernels pad each pass to 8 rows, so the target alone decodes faster "
    "on the library's kernels (edgespec serve --backend transformers-lossy); SD's speed-up "
    "over plain decoding is measured against such a server"
)


@pytest.fixture
def lossy_server(target_model: Any, model_dir: Path) -> Iterator[ServerThread]:
    """A loopback server of the tiny target on the library's kernels (``transformers-lossy``)."""
    lossy = TransformersTarget(target_model, numerics="lossy")
    running = start_server(lossy, target=str(model_dir), host="127.0.0.1")
    yield running
    running.stop(grace_s=0)


def _compare_lines(port: int, capsys: pytest.CaptureFixture[str]) -> list[str]:
    argv = ["draft", "--server", f"127.0.0.1:{port}", "--draft", "ngram", "--compare"]
    assert main([*argv, "--prompt-ids", "1,2,3", "--max-new-tokens", "6"]) == 0
    lines = split_stages(capsys.readouterr().err)[1]
    assert lines[0].startswith("[centralized: 6 tokens, ")
    assert lines[1].startswith("[distributed: 6 tokens, ")
    return lines[2:]


def test_health_says_the_servers_numerics(server: ServerThread, lossy_server: ServerThread) -> None:
    for running, numerics in ((server, "exact"), (lossy_server, "lossy")):
        client = RemoteVerifier(f"127.0.0.1:{running.port}")
        try:
            assert client.describe().numerics == numerics
        finally:
            client.close_channel()


def test_exact_server_names_its_kernels_and_what_its_baseline_costs(
    server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    speedup, note = _compare_lines(server.port, capsys)
    assert re.fullmatch(NUMBERS + r", the server's exact kernels\); outputs identical", speedup)
    assert note == EXACT_NOTE


def test_lossy_server_names_its_kernels_and_nothing_more(
    lossy_server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    (speedup,) = _compare_lines(lossy_server.port, capsys)
    assert re.fullmatch(NUMBERS + r", the server's lossy kernels\); outputs identical", speedup)


class _NoNumerics:
    """The tiny target as a backend from before ``numerics``: all of it but that."""

    def __init__(self, target: TransformersTarget) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        if name == "numerics":
            raise AttributeError(name)
        return getattr(self._target, name)


def test_older_server_that_does_not_say_gets_no_claim_about_kernels(
    target: TransformersTarget, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server whose backend does not say its numerics leaves Health's field unset, as a
    server from before the field does (read as "")."""
    backend: Any = _NoNumerics(target)
    older = start_server(backend, target=str(model_dir), host="127.0.0.1")
    try:
        (speedup,) = _compare_lines(older.port, capsys)
    finally:
        older.stop(grace_s=0)
    assert re.fullmatch(NUMBERS + r"\); outputs identical", speedup), speedup
