"""What the gRPC server and client share; with :mod:`edgespec.runtime.wire.grpc_server`,
:mod:`edgespec.runtime.wire.grpc_client` and :mod:`edgespec.runtime.wire.grpc_calls`, the
only modules that import grpc.

The generated stubs (``pb_grpc``), the :class:`ErrorCode` ⇄ ``grpc.StatusCode`` maps (a
:class:`RequestError` crosses the wire as the status code of the same name) and the
message-size channel options both sides set.
"""

from __future__ import annotations

import importlib
from typing import Any

import grpc

from edgespec.runtime.errors import ErrorCode

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
