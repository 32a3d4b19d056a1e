"""A server's port is its own: a second server on a port one listens on fails with "port P
is in use" (gRPC alone would share it, SO_REUSEPORT), and ``edgespec serve`` says so, exit
status 2, before it loads its model."""

from __future__ import annotations

import socket

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.ports import PortInUseError, ensure_port_free
from tests.runtime.conftest import start_server


def test_a_second_grpc_server_on_a_port_in_use_fails(target: TransformersTarget) -> None:
    first = start_server(target, host="127.0.0.1")
    try:
        with pytest.raises(PortInUseError, match=f"^port {first.port} is in use"):
            start_server(target, port=first.port, host="127.0.0.1")
        assert first.service is not None and first.service.stats().num_sessions == 0
    finally:
        first.stop(grace_s=0)


def test_the_port_is_free_again_once_the_server_stops(target: TransformersTarget) -> None:
    first = start_server(target, host="127.0.0.1")
    port = first.port
    first.stop(grace_s=0)
    second = start_server(target, port=port, host="127.0.0.1")
    try:
        assert second.port == port
    finally:
        second.stop(grace_s=0)


def test_serve_refuses_a_port_in_use_before_loading_its_model(
    listener: int, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--target", "no-such-model", "--host", "127.0.0.1", "--port", str(listener)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == f"edgespec serve: port {listener} is in use (on 127.0.0.1)\n"
    assert "listening" not in captured.out


def test_ensure_port_free(listener: int) -> None:
    with pytest.raises(PortInUseError, match=f"^port {listener} is in use"):
        ensure_port_free("127.0.0.1", listener)
    ensure_port_free("127.0.0.1", 0)  # any free port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        free = int(sock.getsockname()[1])
    ensure_port_free("127.0.0.1", free)
    with pytest.raises(UserInputError, match="^cannot listen on no-such-host.invalid:1234"):
        ensure_port_free("no-such-host.invalid", 1234)
