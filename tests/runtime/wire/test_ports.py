"""A server's port is its own: a second server on a port one listens on fails with "port P
is in use" (gRPC alone would share it, SO_REUSEPORT), and ``edgespec serve`` says so, exit
status 2, before it loads its model."""

from __future__ import annotations

import socket

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.ports import PortInUseError, ensure_port_free, host_port
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


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


def test_an_ipv6_address_is_bracketed_for_grpc() -> None:
    assert host_port("::1", 50051) == "[::1]:50051"
    assert host_port("[::1]", 50051) == "[::1]:50051"
    assert host_port("::", 0) == "[::]:0"
    assert host_port("127.0.0.1", 7) == "127.0.0.1:7" and host_port("node-1", 7) == "node-1:7"


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback on this machine")
@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_a_server_listens_on_an_ipv6_host_and_answers_there(
    target: TransformersTarget, host: str
) -> None:
    """``--host ::1`` passed the check before the model loaded, then failed to listen
    (gRPC read ``::1:PORT`` as host ``::0.1.0.0``, port 443); ``[::1]`` failed the check."""
    ensure_port_free(host, 0)
    server = start_server(target, host=host)
    try:
        verifier = RemoteVerifier(f"[::1]:{server.port}", timeout_s=10.0)
        assert verifier.vocab_size() == target.vocab_size
        verifier.close_channel()
    finally:
        server.stop(grace_s=0)
