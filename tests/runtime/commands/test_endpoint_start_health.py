"""``edgespec draft --serve-openai`` asks each verification server's ``Health`` once as it
starts (and so does ``draft --prompt``): the answer that reached the server (its vocabulary,
while it waits for it) is the one the endpoint's limits, SLO classes and model id are
learnt from. It asked twice (the second after the draft loaded,
:func:`~edgespec.runtime.openai_api.server_facts.described`), with several servers three
times for the one routing chose."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.openai_api import serve, stopping
from edgespec.runtime.wire.grpc_server import _Servicer
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server


@pytest.fixture
def counted_servers(
    target: TransformersTarget, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[list[ServerThread], Counter[int]]]:
    """Two loopback servers of ``model_dir``'s target, and the Health calls each answered
    (by its servicer)."""
    calls: Counter[int] = Counter()
    health = _Servicer.Health
    servers: list[ServerThread] = []

    async def counted(self: _Servicer, request: Any, context: Any) -> Any:
        calls[id(self)] += 1
        return await health(self, request, context)

    monkeypatch.setattr(_Servicer, "Health", counted)
    for _ in range(2):
        servers.append(start_server(target, target=str(model_dir), host="127.0.0.1"))
    yield servers, calls
    for server in servers:
        server.stop(grace_s=0)


@pytest.mark.parametrize("num_servers", [1, 2])
def test_the_endpoint_asks_each_servers_health_once_as_it_starts(
    counted_servers: tuple[list[ServerThread], Counter[int]], model_dir: Path, num_servers: int,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    servers, calls = counted_servers
    stop = stopping.serve_until_stopped

    def stopped_at_once(server: Any, in_flight: Any, signals: Any, say: Any) -> Any:
        """Serving, then SIGTERM at once."""
        return stop(server, in_flight, lambda _s: signal.SIGTERM, say)

    monkeypatch.setattr(serve, "serve_until_stopped", stopped_at_once)
    addresses = ",".join(f"127.0.0.1:{s.port}" for s in servers[:num_servers])
    argv = ["draft", "--server", addresses, "--draft", str(model_dir),
            "--serve-openai", "127.0.0.1:0"]  # fmt: skip
    assert main(argv) == 143
    assert "OpenAI-compatible endpoint on http://127.0.0.1:" in capsys.readouterr().err
    assert sorted(calls.values()) == [1] * num_servers  # was [2] and [2, 3]


def test_draft_asks_its_servers_health_once(
    counted_servers: tuple[list[ServerThread], Counter[int]], model_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``draft --prompt`` too: it asked for the vocabulary, the block limit, the context
    and (without a tokenizer of its own) the target's name, each a Health call."""
    servers, calls = counted_servers
    argv = ["draft", "--server", f"127.0.0.1:{servers[0].port}", "--draft", "ngram",
            "--prompt", "w1 w2 w3", "--max-new-tokens", "4"]  # fmt: skip
    assert main(argv) == 0
    assert capsys.readouterr().out != ""
    assert sorted(calls.values()) == [1]  # was [4]
