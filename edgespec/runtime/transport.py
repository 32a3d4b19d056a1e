"""gRPC transport: the only module that imports grpc.

Server side: :func:`start_server` wraps a :class:`VerificationService` in a
``grpc.aio`` server (auth tokens from metadata, optional TLS, message-size limits).
:class:`ServerThread` runs one on its own event loop in a background thread (tests,
benchmarks). Client side: :class:`RemoteVerifier` is the drafter's
:class:`~edgespec.runtime.drafter.Verifier` over a blocking channel; grpc status codes
come back as :class:`RequestError` with the same :class:`ErrorCode`.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from edgespec.runtime.codec import (
    call_from_proto,
    call_to_proto,
    pb,
    reply_from_proto,
    reply_to_proto,
    spec_from_proto,
    spec_to_proto,
    stats_from_proto,
    stats_to_proto,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.fused_codec import (
    fused_call_from_proto,
    fused_call_to_proto,
    fused_round_from_proto,
    fused_round_to_proto,
)
from edgespec.runtime.messages import (
    PROTOCOL_VERSION,
    FusedCall,
    FusedRound,
    ServerStats,
    SessionSpec,
    VerifyCall,
    VerifyReply,
)
from edgespec.runtime.server import VerificationService
from edgespec.runtime.serving_config import ServerConfig

# generated gRPC stubs (see proto/edgespec.proto); untyped, hence Any
pb_grpc: Any = importlib.import_module("edgespec.runtime.proto.edgespec_pb2_grpc")

_TO_GRPC = {code: getattr(grpc.StatusCode, code.value) for code in ErrorCode}
_FROM_GRPC = {v: k for k, v in _TO_GRPC.items()}


def _grpc_options(max_message_bytes: int) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
    ]


# --- server


@dataclass(frozen=True, slots=True)
class _Undecodable:
    """What a request whose bytes do not parse becomes (the handler answers
    ``INVALID_ARGUMENT`` instead of gRPC's ``UNKNOWN``)."""

    message: str


def _lenient(message_class: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return message_class.FromString(data)
        except Exception as exc:  # protobuf's DecodeError, or anything the parser raises
            return _Undecodable(f"undecodable {message_class.__name__} ({exc})")

    return parse


def _decoded(request: Any) -> Any:
    if isinstance(request, _Undecodable):
        raise RequestError(ErrorCode.INVALID_ARGUMENT, request.message)
    return request


_METHODS = {  # name: (streams its response, request message, response message)
    "OpenSession": (False, "OpenSessionRequest", "OpenSessionResponse"),
    "Verify": (False, "VerifyRequest", "VerifyResponse"),
    "CloseSession": (False, "CloseSessionRequest", "CloseSessionResponse"),
    "Generate": (True, "GenerateRequest", "GenerateChunk"),
    "Stats": (False, "StatsRequest", "StatsResponse"),
    "Health": (False, "HealthRequest", "HealthResponse"),
    "RunFused": (True, "FusedRequest", "FusedRoundChunk"),
}


def _add_servicer(servicer: Any, server: Any) -> None:
    """The generated registration, with request parsing that cannot fail."""
    handlers = {}
    for name, (streams, request, response) in _METHODS.items():
        make = (
            grpc.unary_stream_rpc_method_handler if streams else grpc.unary_unary_rpc_method_handler
        )
        handlers[name] = make(
            getattr(servicer, name),
            request_deserializer=_lenient(getattr(pb, request)),
            response_serializer=getattr(pb, response).SerializeToString,
        )
    generic = grpc.method_handlers_generic_handler("edgespec.v1.Verification", handlers)
    server.add_generic_rpc_handlers((generic,))


class _Servicer(pb_grpc.VerificationServicer):  # type: ignore[misc,name-defined]
    def __init__(self, service: VerificationService) -> None:
        self._service = service
        self._tokens = frozenset(service.config.auth_tokens)

    async def _run(self, context: Any, request: Any, fn: Callable[[str | None], Any]) -> Any:
        try:
            owner = self._authenticate(context)
            _decoded(request)
            result = fn(owner)
            return await result if asyncio.iscoroutine(result) else result
        except RequestError as exc:
            await context.abort(_TO_GRPC[exc.code], exc.message)

    def _authenticate(self, context: Any) -> str | None:
        """The caller's identity (its token) when auth is on, else ``None``."""
        if not self._tokens:
            return None
        metadata = dict(context.invocation_metadata() or ())
        header = metadata.get("authorization", "")
        if not header:
            raise RequestError(ErrorCode.UNAUTHENTICATED, "missing auth token")
        if not header.startswith("Bearer "):
            raise RequestError(
                ErrorCode.UNAUTHENTICATED, "authorization metadata must be 'Bearer <token>'"
            )
        token: str = header.removeprefix("Bearer ").strip()
        if token not in self._tokens:
            raise RequestError(ErrorCode.UNAUTHENTICATED, "invalid auth token")
        return token

    async def OpenSession(self, request: Any, context: Any) -> Any:
        def open_(owner: str | None) -> Any:
            spec = spec_from_proto(request)
            self._service.open_session(spec, owner)
            return pb.OpenSessionResponse(
                session_id=spec.session_id,
                vocab_size=self._service.engine.backend.vocab_size,
                protocol_version=PROTOCOL_VERSION,
            )

        return await self._run(context, request, open_)

    async def Verify(self, request: Any, context: Any) -> Any:
        async def verify(owner: str | None) -> Any:
            call = call_from_proto(request)
            return reply_to_proto(await self._service.verify(call, owner=owner))

        return await self._run(context, request, verify)

    async def CloseSession(self, request: Any, context: Any) -> Any:
        return await self._run(
            context,
            request,
            lambda owner: pb.CloseSessionResponse(
                existed=self._service.close_session(request.session_id, owner)
            ),
        )

    async def Generate(self, request: Any, context: Any) -> AsyncIterator[Any]:
        try:
            owner = self._authenticate(context)
            spec = spec_from_proto(_decoded(request).session)
            fused = request.mode == pb.MODE_FUSED
            chunks = self._service.generate(spec, fused, request.gamma, owner)
            async for tokens, finished in chunks:
                yield pb.GenerateChunk(token_ids=list(tokens), finished=finished)
        except RequestError as exc:
            await context.abort(_TO_GRPC[exc.code], exc.message)

    async def RunFused(self, request: Any, context: Any) -> AsyncIterator[Any]:
        try:
            owner = self._authenticate(context)
            call = fused_call_from_proto(_decoded(request))
            async for fused_round in self._service.run_fused(call, owner):
                yield fused_round_to_proto(fused_round)
        except RequestError as exc:
            await context.abort(_TO_GRPC[exc.code], exc.message)

    async def Stats(self, request: Any, context: Any) -> Any:
        return await self._run(context, request, lambda _: stats_to_proto(self._service.stats()))

    async def Health(self, request: Any, context: Any) -> Any:
        """Serving flag, protocol version, vocabulary size and draft limit; without a token
        unless the config sets ``health_requires_auth``."""

        def health(_: str | None) -> Any:
            return pb.HealthResponse(
                serving=True,
                protocol_version=PROTOCOL_VERSION,
                vocab_size=self._service.engine.backend.vocab_size,
                max_draft_tokens=self._service.config.max_draft_tokens,
            )

        if self._service.config.health_requires_auth:
            return await self._run(context, request, health)
        try:
            _decoded(request)
        except RequestError as exc:
            await context.abort(_TO_GRPC[exc.code], exc.message)
        return health(None)


async def start_server(service: VerificationService, port: int | None = None) -> tuple[Any, int]:
    """Start ``service`` on ``config.host:port`` (``port`` overrides the config; 0 picks a
    free one). Returns the running ``grpc.aio.Server`` and the bound port."""
    config: ServerConfig = service.config
    server = grpc.aio.server(options=_grpc_options(config.max_message_bytes))
    _add_servicer(_Servicer(service), server)
    address = f"{config.host}:{config.port if port is None else port}"
    if config.tls_cert is not None and config.tls_key is not None:
        with open(config.tls_key, "rb") as key, open(config.tls_cert, "rb") as cert:
            creds = grpc.ssl_server_credentials([(key.read(), cert.read())])
        bound = server.add_secure_port(address, creds)
    else:
        bound = server.add_insecure_port(address)
    await service.start()
    await server.start()
    return server, bound


class ServerThread:
    """A server on its own event loop in a daemon thread: ``with ServerThread(make) as s``.

    ``make`` builds the :class:`VerificationService` inside that loop.
    """

    def __init__(self, make: Callable[[], VerificationService], port: int = 0) -> None:
        self._make = make
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0
        self.service: VerificationService | None = None
        self._server: Any = None

    def start(self) -> ServerThread:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        future.result(timeout=30)
        return self

    async def _start(self) -> None:
        self.service = self._make()
        self._server, self.port = await start_server(self.service, self._port)

    def stop(self, grace_s: float | None = None) -> None:
        """Stop the server and its loop (idempotent)."""
        if not self._thread.is_alive():
            return

        async def _stop() -> None:
            await self._server.stop(grace_s)
            if self.service is not None:
                await self.service.stop()

        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- client


class RemoteVerifier:
    """Blocking gRPC client; a :class:`~edgespec.runtime.drafter.Verifier`."""

    def __init__(
        self,
        address: str,
        auth_token: str | None = None,
        tls_ca: str | None = None,
        timeout_s: float = 30.0,
        max_message_bytes: int = 4 << 20,
        tls_server_name: str | None = None,
    ) -> None:
        options = _grpc_options(max_message_bytes)
        if tls_ca is not None:
            with open(tls_ca, "rb") as f:
                creds = grpc.ssl_channel_credentials(root_certificates=f.read())
            if tls_server_name:
                options = [*options, ("grpc.ssl_target_name_override", tls_server_name)]  # type: ignore[list-item]
            self._channel = grpc.secure_channel(address, creds, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._stub = pb_grpc.VerificationStub(self._channel)
        self._metadata = (("authorization", f"Bearer {auth_token}"),) if auth_token else ()
        self._timeout_s = timeout_s

    def _call(self, method: Callable[..., Any], request: Any) -> Any:
        try:
            return method(request, metadata=self._metadata, timeout=self._timeout_s)
        except grpc.RpcError as exc:
            raise _to_request_error(exc) from exc

    def open(self, spec: SessionSpec) -> None:
        self._call(self._stub.OpenSession, spec_to_proto(spec))

    def verify(self, call: VerifyCall) -> VerifyReply:
        response = self._call(self._stub.Verify, call_to_proto(call))
        return reply_from_proto(response, call.draft_token_ids, call.prefix_len)

    def close(self, session_id: str) -> None:
        self._call(self._stub.CloseSession, pb.CloseSessionRequest(session_id=session_id))

    def stats(self) -> ServerStats:
        return stats_from_proto(self._call(self._stub.Stats, pb.StatsRequest()))

    def health(self) -> bool:
        return bool(self._call(self._stub.Health, pb.HealthRequest()).serving)

    def vocab_size(self) -> int:
        """The target's vocabulary size (drafters need it for one-hot q)."""
        return int(self._call(self._stub.Health, pb.HealthRequest()).vocab_size)

    def max_draft_tokens(self) -> int | None:
        """The longest draft block the server verifies (``None`` from servers that do not
        say: they predate the field)."""
        return int(self._call(self._stub.Health, pb.HealthRequest()).max_draft_tokens) or None

    def generate(self, spec: SessionSpec, fused: bool = False, gamma: int = 4) -> Iterator[Any]:
        """Server-side baselines: yields committed token-id tuples as they stream in."""
        request = pb.GenerateRequest(
            session=spec_to_proto(spec),
            mode=pb.MODE_FUSED if fused else pb.MODE_CENTRALIZED,
            gamma=gamma,
        )
        try:
            for chunk in self._stub.Generate(request, metadata=self._metadata):
                yield tuple(chunk.token_ids)
        except grpc.RpcError as exc:
            raise _to_request_error(exc) from exc

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        """A run of fused rounds (:mod:`edgespec.runtime.fused`), round by round as the
        server streams them (no deadline: a run lasts as long as its rounds)."""
        prefix_len = call.prefix_len
        try:
            stream = self._stub.RunFused(fused_call_to_proto(call), metadata=self._metadata)
            for chunk in stream:
                fused_round = fused_round_from_proto(chunk, prefix_len)
                prefix_len += len(fused_round.reply.outcome.committed_token_ids)
                yield fused_round
        except grpc.RpcError as exc:
            raise _to_request_error(exc) from exc

    def close_channel(self) -> None:
        self._channel.close()


def _to_request_error(exc: grpc.RpcError) -> RequestError:
    code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    details = exc.details() if hasattr(exc, "details") else str(exc)
    mapped = _FROM_GRPC.get(code)
    if mapped is None:
        mapped = ErrorCode.UNAVAILABLE if code == grpc.StatusCode.DEADLINE_EXCEEDED else None
    if mapped is None:
        return RequestError(ErrorCode.INVALID_ARGUMENT, f"{code.name}: {details}")
    return RequestError(mapped, details or code.name)
