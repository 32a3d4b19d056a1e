"""Whether a port can be listened on, checked before a server loads its model."""

from __future__ import annotations

import errno
import socket

from edgespec.errors import UserInputError


class PortInUseError(UserInputError):
    """Another process listens on the port a server was asked to listen on."""


def host_port(host: str, port: int) -> str:
    """``host:port`` as gRPC reads an address: an IPv6 literal in brackets (``[::1]:50051``;
    unbracketed, ``::1:50051`` was read as host ``::0.1.0.0``, port 443)."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def ensure_port_free(host: str, port: int) -> None:
    """Bind ``host:port`` for a moment, as the server will: a :class:`PortInUseError`
    ("port P is in use") when a process listens there, a :class:`UserInputError` naming
    the address when it cannot be bound for another reason (a host that does not resolve
    or is not this machine's). Port 0 (any free one) is probed too: its host must be
    bindable.

    The probe sets ``SO_REUSEADDR`` (connections in TIME_WAIT do not count) but not
    ``SO_REUSEPORT``, so any listener fails it, gRPC's included."""
    host = host.strip("[]")  # an IPv6 literal, given as gRPC takes it or bare
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserInputError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError(f"port {port} is in use (on {host})") from exc
            raise UserInputError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
