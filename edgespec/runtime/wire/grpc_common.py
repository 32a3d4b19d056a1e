"""What the gRPC server and client share; with :mod:`edgespec.runtime.wire.grpc_server`,
:mod:`edgespec.runtime.wire.grpc_client` and :mod:`edgespec.runtime.wire.grpc_calls`, the
only modules that import grpc.

The generated stubs (``pb_grpc``), the :class:`ErrorCode` ⇄ ``grpc.StatusCode`` maps (a
:class:`RequestError` crosses the wire as the status code of the same name), the
message-size channel options both sides set, the client channels' reconnect backoff
(:data:`RECONNECT_OPTIONS`) and a client's channel, plaintext or TLS (:func:`client_channel`).
"""

from __future__ import annotations

import importlib
from typing import Any

import grpc

from edgespec.runtime.errors import ErrorCode
from edgespec.server_access_types import read_ca_file

# generated gRPC stubs (see proto/edgespec.proto); untyped, hence Any
pb_grpc: Any = importlib.import_module("edgespec.runtime.proto.edgespec_pb2_grpc")

GRPC_STATUS = {code: getattr(grpc.StatusCode, code.value) for code in ErrorCode}
"""The gRPC status code a :class:`RequestError` of each :class:`ErrorCode` is sent as."""
ERROR_CODE = {v: k for k, v in GRPC_STATUS.items()}
"""The :class:`ErrorCode` a received gRPC status code stands for (:data:`GRPC_STATUS`
inverted)."""


def message_size_options(max_message_bytes: int) -> list[tuple[str, int]]:
    """Server or channel options: send and receive messages of up to ``max_message_bytes``."""
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
    ]


RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
    ("grpc.min_reconnect_backoff_ms", 20_000),
)
"""How a client channel reconnects to a server it lost: its first retry 100 ms after the
failed attempt (gRPC's floor), each next one 1.6x later (±20 % jitter), at most 1 s apart,
so a server back from a restart is reached within about 1.2 s, inside any retry window of
the drafter's (it asks every 50 ms for ``--retry-timeout-s``). gRPC's defaults (1 s, up to
120 s) kept a channel failing ``UNAVAILABLE`` for seconds after its server was back: after
3 s down, until about 5 s. A down server costs at most one connection attempt a second
per channel that calls it.
``min_reconnect_backoff_ms`` is, despite its name, the least time a connection attempt is
given (TCP, TLS and HTTP/2 handshakes: gRPC's ``subchannel.cc`` waits for
``max(next attempt, now + it)``), not a floor of the backoff: kept at gRPC's 20 s, as a slow
link's handshake may take longer than a backoff."""


OWN_CONNECTIONS = (("grpc.use_local_subchannel_pool", 1),)
"""Each client channel keeps its own connections: gRPC's default pool shares them among a
process's channels to one address, with their reconnect backoff, so a client made right
after its server restarted on the same port failed ``UNAVAILABLE: ... Connection refused``
at its first call, from an older client's failed attempt (up to the 1 s backoff above)."""


def client_channel_options(max_message_bytes: int) -> list[tuple[str, int]]:
    """A client channel's options: :func:`message_size_options`,
    :data:`RECONNECT_OPTIONS` and :data:`OWN_CONNECTIONS`."""
    return [*message_size_options(max_message_bytes), *RECONNECT_OPTIONS, *OWN_CONNECTIONS]


def client_channel(
    address: str, max_message_bytes: int, tls_ca: str | None, tls_server_name: str | None
) -> grpc.Channel:
    """A client channel to ``address``: plaintext, or TLS trusting the CA certificates in the
    file ``tls_ca`` and, when given, taking ``tls_server_name`` as the name the server's
    certificate holds. ``ValueError`` unless ``tls_ca`` holds PEM certificates
    (:func:`edgespec.server_access_types.read_ca_file`; the commands check it as their
    flags are parsed): gRPC took any file, printed its own log lines for a key, and trusted
    the system's CAs for an empty one. The file is read once, and the bytes checked are the
    bytes trusted (it was read three times: checked, parsed, then read again for gRPC)."""
    options: list[tuple[str, Any]] = [*client_channel_options(max_message_bytes)]
    if tls_ca is None:
        return grpc.insecure_channel(address, options=options)
    try:
        root_certificates = read_ca_file(tls_ca)
    except ValueError as exc:
        raise ValueError(f"tls_ca {exc}") from None
    creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
    if tls_server_name:
        options.append(("grpc.ssl_target_name_override", tls_server_name))
    return grpc.secure_channel(address, creds, options=options)
