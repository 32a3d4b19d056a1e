"""A client channel's ``--tls-ca`` is read once (it was read three times: checked, parsed by
OpenSSL from the path, read again for gRPC), and the bytes checked are the bytes gRPC is
given: a file replaced after the check is not trusted unchecked."""

from __future__ import annotations

import builtins
import os
import ssl
from pathlib import Path
from typing import Any

import grpc
import pytest

from edgespec.runtime.wire.grpc_common import client_channel
from edgespec.server_access_types import MAX_CA_FILE_BYTES
from tests.runtime.tls_certs import make_ca


def test_one_channel_reads_its_ca_once_and_trusts_the_bytes_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    checked = make_ca(tmp_path, "checked").cert
    other = make_ca(tmp_path, "other").cert
    path = str(tmp_path / "ca.pem")
    os.replace(checked, path)
    checked_bytes = Path(path).read_bytes()
    opened: list[str] = []
    real_open = builtins.open

    def replacing_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        """Opens; the first open of the CA file replaces it at once (the handle keeps the
        file it opened)."""
        handle = real_open(file, *args, **kwargs)
        if file == path:
            opened.append("open")
            if len(opened) == 1:
                os.replace(other, path)
        return handle

    real_load = ssl.SSLContext.load_verify_locations

    def counting_load(self: ssl.SSLContext, cafile: Any = None, *args: Any, **kw: Any) -> None:
        if cafile == path:
            opened.append("openssl")
        real_load(self, cafile, *args, **kw)

    trusted: list[bytes] = []
    real_credentials = grpc.ssl_channel_credentials

    def spy(root_certificates: bytes | None = None, **kwargs: Any) -> grpc.ChannelCredentials:
        trusted.append(root_certificates or b"")
        return real_credentials(root_certificates=root_certificates, **kwargs)

    monkeypatch.setattr(builtins, "open", replacing_open)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting_load)
    monkeypatch.setattr(grpc, "ssl_channel_credentials", spy)
    channel = client_channel("127.0.0.1:1", MAX_CA_FILE_BYTES, path, None)
    channel.close()
    assert trusted == [checked_bytes]
    assert opened == ["open"]
    assert Path(path).read_bytes() != checked_bytes  # replaced, and not read again


def test_a_bundles_comments_in_any_encoding_are_allowed(tmp_path: Path) -> None:
    """Text around the certificates (certifi's bundle names its CAs in UTF-8) is accepted
    as gRPC accepts it; only the certificates are parsed."""
    ca = make_ca(tmp_path, "ca").cert
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes("# Issuer: CN=Főtanúsítvány\n".encode() + ca.read_bytes())
    client_channel("127.0.0.1:1", MAX_CA_FILE_BYTES, str(bundle), None).close()
