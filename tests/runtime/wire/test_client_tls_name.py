"""``RemoteVerifier(tls_server_name=...)``: a server whose certificate names only a DNS
name (no IP address) is reached by IP with the name overridden, and refused without."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import ServerFactory

NAME = "verifier.edgespec.test"


def _cert_for_name_only(directory: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl CLI")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_the_server_name_override_reaches_a_server_by_ip(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    cert, key = _cert_for_name_only(tmp_path)
    server = make_server(tls_cert=str(cert), tls_key=str(key))
    address = f"127.0.0.1:{server.port}"
    named = RemoteVerifier(address, tls_ca=str(cert), tls_server_name=NAME, timeout_s=5)
    assert named.health() is True
    unnamed = RemoteVerifier(address, tls_ca=str(cert), timeout_s=2)
    with pytest.raises(RequestError) as info:  # 127.0.0.1 is not in the certificate
        unnamed.health()
    assert info.value.code is ErrorCode.UNAVAILABLE
