"""How a client reaches a verification server, checked as its flags (argparse value types:
a bad value is argparse's usage error, the flag named, exit status 2) and its config fields
are read: the server's ``host:port``, the CA file that verifies it, and the name its TLS
certificate holds when the address is not it. One rule for each, for every command."""

from __future__ import annotations

import argparse
import os
import re
import ssl
import stat


def server_address_problem(address: str) -> str | None:
    """Why ``address`` is not a verification server's ``host:port`` (``None``: it is); one
    rule for ``draft``'s config and every ``--server`` flag."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"expected host:port with a port in 1..65535, got {address!r}"
    if "/" in host or "@" in host:  # gRPC took it, then failed: "Misformatted domain name"
        return (
            "expected host:port without a scheme, path or user (gRPC speaks to host:port "
            f"itself), got {address!r}"
        )
    return None


def auth_token_problem(token: str) -> str | None:
    """Why ``token`` cannot travel as ``authorization: Bearer TOKEN`` gRPC metadata (``None``:
    it can): empty, spaces around it (the server strips what it reads, so it never matched
    one configured with them), or a character that is no printable ASCII (a newline: the
    client's call failed INTERNAL, "Invalid metadata"). One rule for ``serve``'s tokens and
    every client's ``--auth-token``."""
    if not token.strip():
        return "is empty: give a secret, or no auth token at all for a server without auth"
    if token != token.strip():
        return "has spaces around it, which the server strips from what a client sends"
    if bad := next((c for c in token if not " " <= c <= "~"), None):
        return f"holds {bad!r}: a token is printable ASCII (it travels in a gRPC header)"
    return None


def auth_token(text: str) -> str:
    """An ``--auth-token`` flag's token (:func:`auth_token_problem`)."""
    if (problem := auth_token_problem(text)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def server_address(text: str) -> str:
    """A ``--server`` flag's ``host:port`` (:func:`server_address_problem`)."""
    if (problem := server_address_problem(text)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


MAX_CA_FILE_BYTES = 1 << 20
"""The largest ``--tls-ca`` file read (1 MiB): a CA certificate is 1-2 KB, a whole system
bundle of them about 220 KB; a bigger file is a mistake, and is not read whole."""

_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


def ca_file_problem(path: str) -> str | None:
    """Why ``path`` is not a CA file gRPC's client can trust (``None``: it is); one rule for
    every ``--tls-ca`` flag and ``draft``'s config ``tls_ca``: :func:`read_ca_file`'s."""
    try:
        read_ca_file(path)
    except ValueError as exc:
        return str(exc)
    return None


def read_ca_file(path: str) -> bytes:
    """The bytes of the CA file ``path``, read once and checked (a ``ValueError`` saying why
    not, ``path`` first): a regular file this process can read (gRPC's client opened it
    raw, so a mistake was ``[Errno 2] No such file or directory: '…'`` without the flag),
    holding PEM certificates (:func:`ca_certificates_problem`). Only a regular file is read:
    a FIFO would block. A client channel trusts these very bytes, so a file changed after
    the check is not used unchecked."""
    if not path:
        raise ValueError("expected a file name, got ''")
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a folder, not a file")
    if not os.path.isfile(path):
        raise ValueError(f"{path}: not a regular file")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{path}: cannot be read (permission denied)")
    try:
        with open(path, "rb", opener=_open_nonblocking) as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # replaced since
                raise ValueError(f"{path}: not a regular file")
            data = f.read(MAX_CA_FILE_BYTES + 1)
    except OSError as exc:  # gone or locked since the checks above
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if (problem := ca_certificates_problem(data)) is not None:
        raise ValueError(f"{path}: {problem}")
    return data


def _open_nonblocking(path: str, flags: int) -> int:
    """``open``'s opener: a FIFO opened so is not waited on (then refused as no regular file)."""
    return os.open(path, flags | os.O_NONBLOCK)


_TO_ASCII = bytes(range(128)) + b"?" * 128
"""A ``bytes.translate`` table: each non-ASCII byte to '?' (which no certificate holds)."""


def ca_certificates_problem(data: bytes) -> str | None:
    """Why ``data``, a CA file's first :data:`MAX_CA_FILE_BYTES` + 1 bytes, is not PEM
    certificates and nothing else (``None``: it is). gRPC took anything: a private key
    printed its own log lines, then ``Failed to create security handshaker``; an empty file
    trusted the system's CAs. Text outside the certificates (a bundle's comments, in any
    encoding) is allowed, as OpenSSL and gRPC allow it."""
    if not data:
        return "is empty"
    if len(data) > MAX_CA_FILE_BYTES:
        return f"is over {MAX_CA_FILE_BYTES:,} bytes, too big for CA certificates"
    if _PRIVATE_KEY.search(data):
        if _CERTIFICATE not in data:
            return "holds a private key, not a certificate (give the CA's certificate, e.g. ca.pem)"
        return (
            "holds a private key besides a certificate (keep only the certificate: the file "
            "goes to every device)"
        )
    if _CERTIFICATE not in data:
        return "holds no PEM certificate (no '-----BEGIN CERTIFICATE-----' line)"
    try:  # ssl reads PEM text as ASCII only
        cadata = data.translate(_TO_ASCII).decode("ascii")
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=cadata)
    except ssl.SSLError:  # its reason is OpenSSL's "[X509] PEM lib"
        return "holds a '-----BEGIN CERTIFICATE-----' block that does not parse as a certificate"
    return None


def ca_file(text: str) -> str:
    """A ``--tls-ca`` file: :func:`ca_file_problem`."""
    if (problem := ca_file_problem(text)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


MAX_TLS_SERVER_NAME_CHARS = 253
"""The longest ``--tls-server-name`` (a DNS name's limit): it is read whole, and goes into
every TLS handshake."""

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


def tls_server_name_problem(name: str) -> str | None:
    """Why ``name`` is not a host name a server's certificate can hold (``None``: it is);
    one rule for every ``--tls-server-name`` flag and ``draft``'s config
    ``tls_server_name``: dot-separated labels of letters, digits and inner '-', at most
    :data:`MAX_TLS_SERVER_NAME_CHARS` characters (no space, control character or port)."""
    if len(name) > MAX_TLS_SERVER_NAME_CHARS:
        return f"must be at most {MAX_TLS_SERVER_NAME_CHARS} characters, got {len(name):,}"
    if not _HOST_NAME.fullmatch(name):
        return f"expected a host name (letters, digits, '-' and '.'), got {name!r}"
    return None


def tls_server_name(text: str) -> str:
    """A ``--tls-server-name``: :func:`tls_server_name_problem`."""
    if (problem := tls_server_name_problem(text)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return text
