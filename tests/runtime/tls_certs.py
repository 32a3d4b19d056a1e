"""Real certificates for TLS tests, made with the openssl CLI (the test is skipped without
it): a CA, and a server certificate it signs for the names given."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


@dataclass(frozen=True, slots=True)
class CertPair:
    """A PEM certificate and its private key."""

    cert: Path
    key: Path


def _openssl(*args: str) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl CLI")
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(directory: Path, name: str) -> CertPair:
    """A self-signed CA ``name`` (``name.pem``, ``name.key``) in ``directory``."""
    pair = CertPair(directory / f"{name}.pem", directory / f"{name}.key")
    _openssl("req", "-x509", *_EC, "-days", "1", "-subj", f"/CN={name}",
             "-keyout", str(pair.key), "-out", str(pair.cert))  # fmt: skip
    return pair


def make_server_cert(directory: Path, ca: CertPair, alt_names: str) -> CertPair:
    """``server.pem`` and ``server.key`` in ``directory``, signed by ``ca`` for
    ``alt_names`` (a subjectAltName value: ``DNS:x,IP:127.0.0.1``)."""
    pair = CertPair(directory / "server.pem", directory / "server.key")
    csr, ext = directory / "server.csr", directory / "server.ext"
    ext.write_text(f"subjectAltName={alt_names}\n")
    _openssl("req", *_EC, "-subj", "/CN=server", "-keyout", str(pair.key), "-out", str(csr))
    signer = ["-CA", str(ca.cert), "-CAkey", str(ca.key), "-CAcreateserial"]
    _openssl("x509", "-req", "-in", str(csr), *signer, "-days", "1", "-extfile", str(ext),
             "-out", str(pair.cert))  # fmt: skip
    return pair
