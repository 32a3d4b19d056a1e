"""Whether a server a plaintext client could not talk to speaks TLS.

A server started with ``--tls-cert`` closes a plaintext client's connection, and gRPC says
only ``UNAVAILABLE: Socket closed``, as it says of a server going away: the client retried
it for its whole ``--retry-timeout-s`` before it said so. The first such failure of a
plaintext client (:class:`~edgespec.runtime.wire.grpc_client.RemoteVerifier`) is settled by
one TLS handshake of its own to the address (:func:`speaks_tls`): a server that completes it
speaks TLS, and the client's call fails at once, not retried (:func:`plaintext_refused`). A
plaintext server answers the handshake with HTTP/2 bytes and a stopped one refuses the
connection: both are no TLS, and the call's own failure stands.
"""

from __future__ import annotations

import socket
import ssl

from edgespec.runtime.errors import ErrorCode, RequestError

PROBE_TIMEOUT_S = 1.0
"""The longest the probe's connection and handshake take together (a local or LAN server
answers a handshake in milliseconds; one that does not within this is not taken to speak TLS)."""

SOCKET_CLOSED = "Socket closed"
"""What gRPC says of a connection the server closed (:data:`~edgespec.runtime.errors.TLS_HINTS`)."""


def host_and_port(address: str) -> tuple[str, int] | None:
    """``address``'s host and TCP port: ``host:port``, ``[v6]:port``, or either behind gRPC's
    ``dns:///`` / ``ipv4:`` / ``ipv6:`` schemes; ``None`` for any other form (a Unix socket,
    a list of addresses), which is not probed."""
    for scheme in ("dns:///", "ipv4:", "ipv6:"):
        address = address.removeprefix(scheme)
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or not host or "," in host:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host or "/" in host:
        return None
    return host, int(port)


def speaks_tls(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether a TLS handshake with ``address`` completes within ``timeout_s`` (its
    certificate not checked: this asks only whether the server speaks TLS)."""
    reached = host_and_port(address)
    if reached is None:
        return False
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection(reached, timeout=timeout_s) as raw:
            raw.settimeout(timeout_s)
            with context.wrap_socket(raw, server_hostname=reached[0]):
                return True
    except (OSError, ValueError):  # ssl.SSLError is an OSError
        return False


def plaintext_refused(address: str) -> RequestError:
    """The failure of a plaintext client's call to ``address``, a server that speaks TLS:
    ``FAILED_PRECONDITION`` (not retried: waiting does not change it), saying what to give."""
    return RequestError(
        ErrorCode.FAILED_PRECONDITION,
        f"the server {address} speaks TLS and this client connects in plaintext: give "
        "--tls-ca (the CA certificate that signed the server's --tls-cert)",
    )
