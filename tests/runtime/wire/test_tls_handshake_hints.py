"""A client whose TLS handshake with a running server fails says why in TLS terms: the
server's certificate signed by another CA than ``--tls-ca``, a certificate without the
name the client reached it by, a server that speaks no TLS, a plaintext client of a TLS
server. It said "is an `edgespec serve` running and reachable at the --server address?" of
all four. And a ``tls_ca`` that holds no certificate is refused before gRPC reads it,
from Python too."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.tls_probe import host_and_port, speaks_tls
from tests.runtime.conftest import ServerFactory
from tests.runtime.tls_certs import make_ca, make_server_cert

NAME = "verifier.edgespec.test"


def _drafting_server_line(port: int, ca: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``drafting-server``'s stderr against the server on ``port`` trusting ``ca``
    (exit 1: it reaches the server before anything loads), as its only line (gRPC's own
    lines, INFO in this process, are the command's only from ``GRPC_VERBOSITY=INFO``)."""
    cli = ["drafting-server", "--server", f"127.0.0.1:{port}", "--draft", "somewhere"]
    assert main([*cli, "--tls-ca", str(ca), "--timeout-s", "5"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("edgespec drafting-server: UNAVAILABLE: failed to connect to all ")
    return line


def test_a_server_certificate_from_another_ca_is_said_so(
    make_server: ServerFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = make_server_cert(tmp_path, make_ca(tmp_path, "ca"), "IP:127.0.0.1")
    server = make_server(tls_cert=str(served.cert), tls_key=str(served.key))
    other = make_ca(tmp_path, "other")
    line = _drafting_server_line(server.port, other.cert, capsys)
    assert line.endswith(
        "CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate: OK (the server's "
        "certificate is not signed by the --tls-ca CA)"
    )


def test_a_server_certificate_without_the_servers_name_is_said_so(
    make_server: ServerFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = make_ca(tmp_path, "ca")
    served = make_server_cert(tmp_path, ca, f"DNS:{NAME}")  # reached as 127.0.0.1
    server = make_server(tls_cert=str(served.cert), tls_key=str(served.key))
    line = _drafting_server_line(server.port, ca.cert, capsys)
    assert line.endswith(
        "Hostname Verification Check failed. (the server's certificate does not name the "
        "host it was checked for (--tls-server-name if given, else the host in --server): "
        "give a name it holds with --tls-server-name)"
    )
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}", tls_ca=str(ca.cert),
                              tls_server_name=NAME, timeout_s=5)  # fmt: skip
    assert verifier.health() is True  # the same CA and server, by the name it holds


def test_a_server_without_tls_is_said_so(
    make_server: ServerFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = make_server()
    line = _drafting_server_line(server.port, make_ca(tmp_path, "ca").cert, capsys)
    assert "WRONG_VERSION_NUMBER" in line and line.endswith(
        " (the server does not speak TLS: drop --tls-ca, or serve with --tls-cert and --tls-key)"
    )


def test_a_closed_port_still_asks_whether_a_server_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _drafting_server_line(1, make_ca(tmp_path, "ca").cert, capsys)
    assert line.endswith(
        "Connection refused (is an `edgespec serve` running and reachable at the --server address?)"
    )


def test_a_key_given_as_the_ca_is_refused_before_grpc_reads_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ca = make_ca(tmp_path, "ca")
    with pytest.raises(ValueError) as info:
        RemoteVerifier("127.0.0.1:1", tls_ca=str(ca.key))
    assert str(info.value) == (
        f"tls_ca {ca.key}: holds a private key, not a certificate (give the CA's "
        "certificate, e.g. ca.pem)"
    )
    assert capfd.readouterr().err == ""  # no "Could not load any root certificate"


def test_a_plaintext_client_of_a_tls_server_is_told_to_give_the_ca_at_once(
    make_server: ServerFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gRPC says only 'Socket closed', as of a server going away: the client retried for its
    whole --retry-timeout-s, then asked whether a server runs there at all. One TLS
    handshake of its own settles it: said at once, not retried."""
    served = make_server_cert(tmp_path, make_ca(tmp_path, "ca"), "IP:127.0.0.1")
    server = make_server(tls_cert=str(served.cert), tls_key=str(served.key))
    address = f"127.0.0.1:{server.port}"
    cli = ["draft", "--server", address, "--draft", "gemma3-270m-draft", "--prompt-ids", "1,2"]
    started_s = time.monotonic()
    assert main([*cli, "--retry-timeout-s", "60"]) == 1
    assert time.monotonic() - started_s < 20
    connecting, refused = capsys.readouterr().err.splitlines()
    assert connecting == f"edgespec draft: [  0.0 s] connecting to {address} ..."
    assert refused == (
        f"edgespec draft: FAILED_PRECONDITION: the server {address} speaks TLS and this client "
        "connects in plaintext: give --tls-ca (the CA certificate that signed the server's "
        "--tls-cert)"
    )


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:50461", ("127.0.0.1", 50461)),
        ("dns:///verifier.example:443", ("verifier.example", 443)),
        ("ipv4:10.0.0.2:7", ("10.0.0.2", 7)),
        ("[::1]:50461", ("::1", 50461)),
        ("ipv6:[::1]:8", ("::1", 8)),
        ("unix:/tmp/edgespec.sock", None),
        ("ipv4:10.0.0.1:1,10.0.0.2:2", None),
        ("::1:50461", None),
        ("verifier.example", None),
        (":50461", None),
    ],
)
def test_the_probe_reads_host_and_port_or_leaves_the_address_alone(
    address: str, expected: tuple[str, int] | None
) -> None:
    assert host_and_port(address) == expected


def test_the_probe_finds_no_tls_at_a_plaintext_server_or_a_closed_port(
    make_server: ServerFactory,
) -> None:
    server = make_server()
    assert speaks_tls(f"127.0.0.1:{server.port}") is False
    assert speaks_tls("127.0.0.1:1") is False
