"""What the gRPC servicer (:mod:`edgespec.runtime.wire.grpc_server`) makes of a request
before the service sees it, protobuf only (no grpc here): a request whose bytes do not
parse (:func:`lenient`, :func:`decoded`: ``INVALID_ARGUMENT`` rather than gRPC's
``UNKNOWN``) and a ``GenerateRequest``'s mode and session (:func:`generate_from_proto`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.codec import pb, spec_from_proto


@dataclass(frozen=True, slots=True)
class Undecodable:
    """What a request whose bytes do not parse becomes (the handler answers
    ``INVALID_ARGUMENT`` instead of gRPC's ``UNKNOWN``)."""

    message: str


def lenient(message_class: Any) -> Callable[[bytes], Any]:
    """A deserializer of ``message_class`` that cannot fail: bytes that do not parse come
    back as :class:`Undecodable`."""

    def parse(data: bytes) -> Any:
        try:
            return message_class.FromString(data)
        except Exception as exc:  # protobuf's DecodeError, or anything the parser raises
            return Undecodable(f"undecodable {message_class.__name__} ({exc})")

    return parse


def decoded(request: Any) -> Any:
    """``request``, or ``INVALID_ARGUMENT`` saying why its bytes did not parse."""
    if isinstance(request, Undecodable):
        raise RequestError(ErrorCode.INVALID_ARGUMENT, request.message)
    return request


_GENERATE_MODES = {pb.MODE_CENTRALIZED: False, pb.MODE_FUSED: True}


def generate_from_proto(request: Any) -> tuple[SessionSpec, bool]:
    """A ``GenerateRequest``'s session and whether it is fused; ``INVALID_ARGUMENT`` for a
    mode that is neither, or a session asking for what Generate cannot send
    (``return_hidden``: it streams token ids only). ``gamma`` is the fused mode's window;
    the centralized mode drafts nothing and reads none."""
    if request.mode not in _GENERATE_MODES:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"mode {request.mode}: Generate cannot run it; its modes are MODE_CENTRALIZED (0) "
            "and MODE_FUSED (1)",
        )
    spec = spec_from_proto(request.session)
    if spec.return_hidden:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            "session.return_hidden: Generate cannot send hidden states (it streams token ids "
            "only); open a session and Verify for them",
        )
    return spec, _GENERATE_MODES[request.mode]
