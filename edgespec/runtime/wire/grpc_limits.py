"""The gRPC server's connection bounds (protobuf and grpc free: options are plain pairs).

A connection that has not finished its handshake and sent HTTP/2's SETTINGS within
:data:`HANDSHAKE_TIMEOUT_S` is closed (gRPC's own default waits 120 s); one without calls
for :data:`IDLE_CONNECTION_S` is sent GOAWAY and closed (a drafter's channel reconnects at
its next call, transparently); at most ``ServerConfig.max_connections`` are open at once,
handshaking ones included (one more is closed as it is accepted), and each carries at most
:data:`MAX_CONCURRENT_STREAMS` calls at once (a client keeps within that: more at once
are not all queued by gRPC's client, some refused ``UNAVAILABLE``, REFUSED_STREAM). The
process keeps :data:`FD_RESERVE` file descriptors beyond the connections for its own files
(:func:`ensure_fd_room`), so sockets that never speak cannot exhaust them: a process-wide
change, which the serving command makes as it starts (``edgespec serve``), not the server's
start, so a process that starts a server in-process keeps its limit.
"""

from __future__ import annotations

import resource

from edgespec.errors import UserInputError
from edgespec.runtime.open_files import LimitNotRaised, raise_soft_limit

HANDSHAKE_TIMEOUT_S = 5.0
"""How long a new connection has to finish its (TLS) handshake and send HTTP/2 SETTINGS."""
IDLE_CONNECTION_S = 60.0
"""How long a connection without calls stays open."""
MAX_CONCURRENT_STREAMS = 256
"""Calls at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS)."""
FD_RESERVE = 128
"""File descriptors kept beyond ``max_connections``: model files, the metrics endpoint,
logs, gRPC's own."""


def connection_options(max_connections: int) -> list[tuple[str, int]]:
    """Server options: the bounds above, at most ``max_connections`` connections."""
    return [
        ("grpc.server_handshake_timeout_ms", round(HANDSHAKE_TIMEOUT_S * 1000)),
        ("grpc.max_connection_idle_ms", round(IDLE_CONNECTION_S * 1000)),
        ("grpc.max_allowed_incoming_connections", max_connections),
        ("grpc.max_concurrent_streams", MAX_CONCURRENT_STREAMS),
    ]


def ensure_fd_room(max_connections: int) -> None:
    """Let this process open ``max_connections`` + :data:`FD_RESERVE` file descriptors:
    the soft limit (``ulimit -n``) is raised that far when it is lower and the hard limit
    allows it; when the hard limit does not, a :class:`UserInputError` saying both numbers
    (connections beyond the limit would fail the server's own files, and gRPC's accept
    loop would spin on "File descriptor limit reached")."""
    needed = max_connections + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise UserInputError(
            f"max_connections {max_connections} needs {needed} file descriptors "
            f"({FD_RESERVE} more for the server's own files), but this process may open "
            f"at most {hard} (ulimit -Hn): lower max_connections (--set max_connections=N) "
            "or raise the limit"
        )
    try:
        raise_soft_limit(needed)
    except LimitNotRaised as exc:
        raise UserInputError(
            f"max_connections {max_connections} needs {needed} file descriptors, but this "
            f"process may open {soft} (ulimit -n) and cannot raise it ({exc.reason}): lower "
            "max_connections (--set max_connections=N) or raise the limit"
        ) from exc
