"""gRPC server side: :func:`start_server` wraps a :class:`VerificationService` in a
``grpc.aio`` server (auth tokens from metadata, optional TLS, message-size limits, requests
that do not parse answered ``INVALID_ARGUMENT`` (:mod:`.requests`), :class:`RequestError`
sent as its gRPC status code, any other exception of a handler as ``INTERNAL`` naming it).
:class:`~edgespec.runtime.wire.server_thread.ServerThread` runs one on its own event loop
in a background thread. The client is :mod:`edgespec.runtime.wire.grpc_client`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.wire_limits import UINT32_LIMIT
from edgespec.errors import UserInputError
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import PROTOCOL_VERSION, SessionSpec
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.validation import check_identifier
from edgespec.runtime.wire.codec import (
    call_from_proto,
    pb,
    reply_to_proto,
    spec_from_proto,
    stats_to_proto,
)
from edgespec.runtime.wire.fused_codec import fused_call_from_proto, fused_round_to_proto
from edgespec.runtime.wire.grpc_common import GRPC_STATUS, message_size_options, pb_grpc
from edgespec.runtime.wire.grpc_limits import connection_options
from edgespec.runtime.wire.logprob_codec import PROMPT, logprobs_to_proto
from edgespec.runtime.wire.ports import ensure_port_free, host_port
from edgespec.runtime.wire.reply_size import check_first_reply
from edgespec.runtime.wire.requests import decoded, generate_from_proto, lenient

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
            request_deserializer=lenient(getattr(pb, request)),
            response_serializer=getattr(pb, response).SerializeToString,
        )
    generic = grpc.method_handlers_generic_handler("edgespec.v1.Verification", handlers)
    server.add_generic_rpc_handlers((generic,))


_log = logging.getLogger(__name__)

MAX_DETAILS_CHARS = 2000
"""The longest status message sent: gRPC carries it in a header of at most 16 KiB (percent-
encoded), and a longer one reaches the client as a RESOURCE_EXHAUSTED of its own."""


async def _abort(context: Any, exc: RequestError) -> None:
    """End the call with ``exc``'s status and message, the message cut to
    :data:`MAX_DETAILS_CHARS` (saying how long it was)."""
    message = exc.message
    if len(message) > MAX_DETAILS_CHARS:
        message = f"{message[:MAX_DETAILS_CHARS]} ... ({len(message)} characters in all)"
    await context.abort(GRPC_STATUS[exc.code], message)


def _internal(method: str, exc: Exception) -> RequestError:
    """What a handler's unexpected exception becomes: ``INTERNAL`` saying what was raised
    where (logged with its traceback), not gRPC's bare ``UNKNOWN``."""
    _log.exception("%s failed", method)
    return RequestError(ErrorCode.INTERNAL, f"{method} failed on the server: {exc!r}")


class _Servicer(pb_grpc.VerificationServicer):  # type: ignore[misc]
    def __init__(self, service: VerificationService) -> None:
        self._service = service
        self._tokens = frozenset(service.config.auth_tokens)

    async def _refuse(self, context: Any, exc: RequestError) -> None:
        """End the call with ``exc``, counted once whoever raised it (auth, decoding, service)."""
        self._service.refused(exc)
        await _abort(context, exc)

    async def _run(
        self, method: str, context: Any, request: Any, fn: Callable[[str | None], Any]
    ) -> Any:
        try:
            owner = self._authenticate(context)
            decoded(request)
            result = fn(owner)
            return await result if asyncio.iscoroutine(result) else result
        except RequestError as exc:
            await self._refuse(context, exc)
        except Exception as exc:
            await self._refuse(context, _internal(method, exc))

    def _authenticate(self, context: Any) -> str | None:
        """The caller's identity (its token) when auth is on, else ``None``."""
        if not self._tokens:
            return None
        headers = [v for k, v in context.invocation_metadata() or () if k == "authorization"]
        if len(headers) > 1:  # a proxy reading the first would see another identity
            message = f"authorization metadata given {len(headers)} times; give it once"
            raise RequestError(ErrorCode.UNAUTHENTICATED, message)
        header = headers[0] if headers else ""
        if not header:
            raise RequestError(ErrorCode.UNAUTHENTICATED, "missing auth token")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer":  # a scheme is case-insensitive (RFC 7235 2.1)
            raise RequestError(
                ErrorCode.UNAUTHENTICATED, "authorization metadata must be 'Bearer <token>'"
            )
        token: str = given.strip()
        if token not in self._tokens:
            raise RequestError(ErrorCode.UNAUTHENTICATED, "invalid auth token")
        return token

    def _check_first_reply(self, spec: SessionSpec) -> None:
        backend = self._service.engine.backend
        check_first_reply(spec, backend, backend.vocab_size, self._service.config)

    async def OpenSession(self, request: Any, context: Any) -> Any:
        def open_(owner: str | None) -> Any:
            spec = spec_from_proto(request)
            self._check_first_reply(spec)
            self._service.open_session(spec, owner)
            return pb.OpenSessionResponse(
                session_id=spec.session_id,
                vocab_size=self._service.engine.backend.vocab_size,
                protocol_version=PROTOCOL_VERSION,
            )

        return await self._run("OpenSession", context, request, open_)

    async def Verify(self, request: Any, context: Any) -> Any:
        async def verify(owner: str | None) -> Any:
            vocab_size = self._service.engine.backend.vocab_size
            call = call_from_proto(request, vocab_size, self._service.config.max_draft_tokens)
            time_left_s = context.time_remaining()  # None: no deadline
            return reply_to_proto(await self._service.verify(call, owner, time_left_s))

        return await self._run("Verify", context, request, verify)

    async def CloseSession(self, request: Any, context: Any) -> Any:
        def close(owner: str | None) -> Any:
            check_identifier("session_id", request.session_id)
            return pb.CloseSessionResponse(
                existed=self._service.close_session(request.session_id, owner)
            )

        return await self._run("CloseSession", context, request, close)

    async def Generate(self, request: Any, context: Any) -> AsyncIterator[Any]:
        try:
            owner = self._authenticate(context)
            spec, fused = generate_from_proto(decoded(request))
            if not fused:  # a fused run returns no hidden states or log-probabilities
                self._check_first_reply(spec)
            given: list[TokenLogprobs] = []  # the next chunk's, given before it is yielded
            prompt: list[TokenLogprobs] = []  # the prompt's, before the first chunk
            chunks = self._service.generate(spec, fused, request.gamma, owner, given.extend,
                                            prompt.extend)  # fmt: skip
            async for tokens, finished in chunks:
                chunk = pb.GenerateChunk(token_ids=tokens, finished=finished)
                logprobs_to_proto(chunk, tuple(prompt), PROMPT)
                yield logprobs_to_proto(chunk, tuple(given))
                given.clear()
                prompt.clear()
        except RequestError as exc:
            await self._refuse(context, exc)
        except Exception as exc:
            await self._refuse(context, _internal("Generate", exc))

    async def RunFused(self, request: Any, context: Any) -> AsyncIterator[Any]:
        try:
            owner = self._authenticate(context)
            call = fused_call_from_proto(decoded(request))
            async for fused_round in self._service.run_fused(call, owner):
                yield fused_round_to_proto(fused_round)
        except RequestError as exc:
            await self._refuse(context, exc)
        except Exception as exc:
            await self._refuse(context, _internal("RunFused", exc))

    async def Stats(self, request: Any, context: Any) -> Any:
        def stats(_: str | None) -> Any:
            return stats_to_proto(self._service.stats())

        return await self._run("Stats", context, request, stats)

    async def Health(self, request: Any, context: Any) -> Any:
        """Serving flag, protocol version, vocabulary size, draft limit, the target's name,
        context (0 when a uint32 cannot carry it: clients leave the check to OpenSession) and
        numerics, the SLO classes and the per-client session quota (clients check both up
        front), whether it runs fused rounds and the SHA-256 of its semantic decision head;
        without a token unless the config sets ``health_requires_auth``."""
        backend = self._service.engine.backend
        max_context = backend.max_context_tokens
        config = self._service.config

        def health(_: str | None) -> Any:
            return pb.HealthResponse(
                serving=True, protocol_version=PROTOCOL_VERSION, vocab_size=backend.vocab_size,
                max_draft_tokens=config.max_draft_tokens, target=config.target or "",
                max_context_tokens=max_context if max_context < UINT32_LIMIT else 0,
                slo_classes=sorted(config.slo_classes),
                max_sessions_per_client=min(config.max_sessions_per_client, UINT32_LIMIT - 1),
                numerics=getattr(backend, "numerics", ""),
                runs_fused_rounds=self._service.runs_fused_rounds,
                semantic_head_sha256=self._service.engine.semantic_head_sha256,
            )  # fmt: skip

        if config.health_requires_auth:
            return await self._run("Health", context, request, health)
        try:
            decoded(request)
        except RequestError as exc:
            await self._refuse(context, exc)
        return health(None)


async def start_server(service: VerificationService, port: int | None = None) -> tuple[Any, int]:
    """Start ``service`` on ``config.host:port`` (``port`` overrides the config; 0 picks a
    free one), its connections bounded (:mod:`.grpc_limits`). Returns the running
    ``grpc.aio.Server`` and the bound port. The process's open-file limit is left as it
    is: room for ``max_connections`` (:func:`~.grpc_limits.ensure_fd_room`, a process-wide
    change) is the serving command's to make as it starts.

    The port is bound exclusively (gRPC's default ``SO_REUSEPORT`` is off): a port another
    server listens on is a :class:`PortInUseError`, not a second listener sharing the
    traffic."""
    config: ServerConfig = service.config
    options = [*message_size_options(config.max_message_bytes), ("grpc.so_reuseport", 0)]
    options += connection_options(config.max_connections)
    server = grpc.aio.server(options=options)
    _add_servicer(_Servicer(service), server)
    wanted = config.port if port is None else port
    address = host_port(config.host, wanted)
    try:
        if config.tls_cert is not None and config.tls_key is not None:
            with open(config.tls_key, "rb") as key, open(config.tls_cert, "rb") as cert:
                creds = grpc.ssl_server_credentials([(key.read(), cert.read())])
            bound = server.add_secure_port(address, creds)
        else:
            bound = server.add_insecure_port(address)
    except RuntimeError as exc:  # grpc's "Failed to bind to address"
        ensure_port_free(config.host, wanted)  # names the cause when it can
        raise UserInputError(f"cannot listen on {address}: {exc}") from exc
    await service.start()
    await server.start()
    return server, bound
