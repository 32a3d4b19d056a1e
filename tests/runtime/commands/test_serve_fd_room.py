"""``edgespec serve`` makes room for ``max_connections`` in the open-file limit as it
starts, before its model loads (so before its port is bound): the soft limit raised, or a
hard limit without room refused in one line, exit status 2. The model name here does not
exist, so a check that came after loading would fail on it instead; ``start_server``
itself leaves the limit alone (:mod:`tests.runtime.wire.test_grpc_connections`)."""

from __future__ import annotations

import resource

import pytest

from edgespec.cli import main
from tests.runtime.wire.test_grpc_connections import _limits

SERVE = ["serve", "--target", "no-such-model", "--host", "127.0.0.1", "--port", "0"]


def test_serve_refuses_a_hard_limit_without_room_before_its_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _limits(monkeypatch, soft=256, hard=600)
    assert main(SERVE) == 2
    assert capsys.readouterr().err == (
        "edgespec serve: max_connections 512 needs 640 file descriptors (128 more for the "
        "server's own files), but this process may open at most 600 (ulimit -Hn): lower "
        "max_connections (--set max_connections=N) or raise the limit\n"
    )
    assert calls == []


def test_serve_raises_the_soft_limit_before_its_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _limits(monkeypatch, soft=256, hard=10_000)
    assert main([*SERVE, "--set", "max_connections=1000"]) == 2  # the model does not exist
    assert calls == [(resource.RLIMIT_NOFILE, (1128, 10_000))]
    assert capsys.readouterr().err.startswith("edgespec serve: unknown model 'no-such-model': ")
