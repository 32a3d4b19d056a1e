"""What the loopback gRPC semantic serving tests share: the generation length, the draft
window and a client of a started server."""

from __future__ import annotations

from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread

MAX_NEW = 24
GAMMA = 4


def remote(server: ServerThread) -> RemoteVerifier:
    """A gRPC client of ``server`` on loopback."""
    return RemoteVerifier(f"127.0.0.1:{server.port}")
