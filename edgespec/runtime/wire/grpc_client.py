"""gRPC client side: :class:`RemoteVerifier` is the drafter's
:class:`~edgespec.runtime.edge.drafter.Verifier` over a blocking channel; gRPC status codes
come back as :class:`RequestError` with the same :class:`ErrorCode`
(:func:`~edgespec.runtime.wire.grpc_calls.to_request_error`). The server is
:mod:`edgespec.runtime.wire.grpc_server`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc

from edgespec.errors import UserInputError
from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S
from edgespec.runtime.errors import DEADLINE_EXCEEDED, ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    ServerHealth,
    ServerStats,
    SessionSpec,
    VerifyCall,
    VerifyReply,
)
from edgespec.runtime.wire.codec import (
    call_to_proto,
    pb,
    reply_from_proto,
    spec_to_proto,
    stats_from_proto,
)
from edgespec.runtime.wire.fused_codec import fused_call_to_proto, fused_round_from_proto
from edgespec.runtime.wire.grpc_calls import (
    answered_or_cancelled,
    check_uint32s,
    to_request_error,
)
from edgespec.runtime.wire.grpc_common import client_channel, pb_grpc
from edgespec.runtime.wire.health_codec import health_from_proto
from edgespec.runtime.wire.logprob_codec import PROMPT, logprobs_from_proto
from edgespec.runtime.wire.stream_deadline import ChunkDeadline, next_chunk
from edgespec.runtime.wire.tls_probe import SOCKET_CLOSED, plaintext_refused, speaks_tls


class RemoteVerifier:
    """Blocking gRPC client; a :class:`~edgespec.runtime.edge.drafter.Verifier` (and a
    ``BoundedOpen`` and ``BoundedVerify``: :mod:`~edgespec.runtime.edge.bounded_calls`).
    Every call has ``timeout_s`` to answer, ``CloseSession`` ``close_timeout_s`` (default the
    same): a client cleaning up after a server that stopped answering can give it less."""

    def __init__(
        self,
        address: str,
        auth_token: str | None = None,
        tls_ca: str | None = None,
        timeout_s: float = 30.0,
        max_message_bytes: int = 4 << 20,
        tls_server_name: str | None = None,
        close_timeout_s: float | None = None,
    ) -> None:
        self._channel = client_channel(address, max_message_bytes, tls_ca, tls_server_name)
        self._stub = pb_grpc.VerificationStub(self._channel)
        self.address = address
        self._metadata = (("authorization", f"Bearer {auth_token}"),) if auth_token else ()
        self._timeout_s = timeout_s
        self._close_timeout_s = timeout_s if close_timeout_s is None else close_timeout_s
        self._max_message_bytes = max_message_bytes
        self._unwaited: set[Any] = set()  # closes not waited for: kept until they end
        self._closing: set[str] = set()  # their sessions
        self._plaintext = tls_ca is None
        self._tls_probed = self._speaks_tls = False

    def _failure(self, exc: grpc.RpcError) -> RequestError:
        """A call's failure as a :class:`RequestError`; a plaintext client's first ``Socket
        closed`` probes for TLS (:mod:`~edgespec.runtime.wire.tls_probe`), and a TLS server's
        every unreached call says so, not retried."""
        error = to_request_error(exc)
        if error.code is not ErrorCode.UNAVAILABLE or not self._plaintext:
            return error
        if not self._tls_probed and SOCKET_CLOSED in error.message:
            self._tls_probed = True
            self._speaks_tls = speaks_tls(self.address)
        return plaintext_refused(self.address) if self._speaks_tls else error

    def _call(
        self, method: Callable[..., Any], request: Any, timeout_s: float | None = None
    ) -> Any:
        """``method``'s reply within ``timeout_s`` (at most this client's, the default)."""
        try:
            timeout = self._timeout_s if timeout_s is None else min(timeout_s, self._timeout_s)
            return method(request, metadata=self._metadata, timeout=timeout)
        except grpc.RpcError as exc:
            raise self._failure(exc) from exc

    def _check_size(self, request: Any, what: str, advice: str) -> Any:
        """``request`` when it fits this client's message limit; else a clear
        ``INVALID_ARGUMENT`` before anything is sent (gRPC's own refusal names no cause)."""
        size = request.ByteSize()
        if size > self._max_message_bytes:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"{what} is {size:,} bytes, over this client's gRPC message limit of "
                f"{self._max_message_bytes:,} bytes: {advice}, or raise --max-message-bytes "
                "(and the server's max_message_bytes)",
            )
        return request

    def _open_request(self, spec: SessionSpec) -> Any:
        request = spec_to_proto(check_uint32s(spec))
        advice = f"shorten the prompt ({len(spec.prompt_token_ids)} tokens)"
        return self._check_size(request, "the prompt", advice)

    def open(self, spec: SessionSpec) -> None:
        self._call(self._stub.OpenSession, self._open_request(spec))

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None:
        """:meth:`open` within ``timeout_s`` (at most this client's), else ``UNAVAILABLE``;
        cut short as :meth:`verify_within` is (the session, maybe opened, closed)."""
        request = self._open_request(spec)
        self._cancellable(self._stub.OpenSession, request, timeout_s, cancel,
                          (spec.session_id, "its session's open"))  # fmt: skip

    def _cancellable(self, method: Any, request: Any, timeout_s: float,
                     cancel: threading.Event | None, session: tuple[str, str]) -> Any:  # fmt: skip
        """``method``'s reply within ``timeout_s`` (at most this client's), cut short once
        ``cancel`` is set or on an interrupt (:func:`~.grpc_calls.answered_or_cancelled`):
        then ``session`` (its id, and what call of it went unanswered) closed unwaited."""
        call = method.future(request, metadata=self._metadata,
                             timeout=min(timeout_s, self._timeout_s))  # fmt: skip
        session_id, what = session
        closing = lambda: self._start_close(session_id)  # noqa: E731
        answered_or_cancelled(call, cancel, RETRY_BACKOFF_S, closing, what)
        try:
            return call.result()
        except grpc.RpcError as exc:
            raise self._failure(exc) from exc

    def _start_close(self, session_id: str) -> Any:
        """Close ``session_id`` without waiting for the answer (within ``close_timeout_s``):
        the call, kept until it ends (gRPC cancels a call whose future is collected); until
        then :meth:`close` of it sends nothing more."""
        request = pb.CloseSessionRequest(session_id=session_id)
        closing = self._stub.CloseSession.future(request, metadata=self._metadata,
                                                 timeout=self._close_timeout_s)  # fmt: skip
        self._unwaited.add(closing)
        self._closing.add(session_id)
        closing.add_done_callback(lambda c: self._ended(c, session_id))
        return closing

    def _ended(self, closing: Any, session_id: str) -> None:
        self._unwaited.discard(closing)
        self._closing.discard(session_id)

    def close_together(self, session_ids: Sequence[str]) -> None:
        """Close every session at once, each within ``close_timeout_s`` of now, and wait for
        all: a hung server costs one close deadline, not one per session nor a thread each;
        a close refused or unanswered is no error (the server expires the session)."""
        for closing in [self._start_close(session_id) for session_id in session_ids]:
            closing.exception()  # waits for the answer or the deadline

    def verify(self, call: VerifyCall) -> VerifyReply:
        return self.verify_within(call, self._timeout_s)

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply:
        """``call`` answered within ``timeout_s`` (at most this client's), else past its
        deadline (``UNAVAILABLE``); once ``cancel`` is set (seen within ``RETRY_BACKOFF_S``)
        or on an interrupt, the call cancelled, its session closed unwaited: Cancelled."""
        what = f"the draft block of {len(call.draft_token_ids)} tokens"
        request = self._check_size(call_to_proto(call), what, "draft fewer tokens per round "
                                   "(--gamma)")  # fmt: skip
        if cancel is None:
            response = self._call(self._stub.Verify, request, timeout_s)
        else:
            response = self._cancellable(self._stub.Verify, request, timeout_s, cancel,
                                         (call.session_id, "its verification"))  # fmt: skip
        return reply_from_proto(response, call.draft_token_ids, call.prefix_len)

    def close(self, session_id: str) -> None:
        if session_id in self._closing:  # a close not waited for is under way
            return
        request = pb.CloseSessionRequest(session_id=session_id)
        self._call(self._stub.CloseSession, request, self._close_timeout_s)

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        """The server's counters, within ``timeout_s`` (at most this client's, the default)."""
        return stats_from_proto(self._call(self._stub.Stats, pb.StatsRequest(), timeout_s))

    def check_credentials(self) -> None:
        """One call the server authenticates (``Stats``: it reads counters; ``Health``
        answers without a token), so that a token it does not take is said as a drafter
        starts, a :class:`UserInputError` naming the server, not in every request's refusal."""
        try:
            self.stats()
        except RequestError as exc:
            if exc.code is not ErrorCode.UNAUTHENTICATED:
                raise
            raise self.token_refused(exc) from None

    def token_refused(self, exc: RequestError) -> UserInputError:
        """The server's ``UNAUTHENTICATED`` (``exc``) as the one line a drafter says: the
        server needs a token (none given), or does not take this one."""
        said = f"{exc.code.value}: {exc.message}"
        if not self._metadata:
            return UserInputError(f"the server {self.address} needs an auth token ({said}): "
                                  "give --auth-token")  # fmt: skip
        return UserInputError(f"--auth-token: the server {self.address} does not take it "
                              f"({said})")  # fmt: skip

    def describe(self) -> ServerHealth:
        """What the server's ``Health`` says, in one call (the methods below each ask it
        for one fact)."""
        return health_from_proto(self._call(self._stub.Health, pb.HealthRequest()))

    def health(self) -> bool:
        return self.describe().serving

    def vocab_size(self) -> int:
        """The target's vocabulary size (drafters need it for one-hot q)."""
        return self.describe().vocab_size

    def max_draft_tokens(self) -> int | None:
        """The longest draft block the server verifies (``None`` from servers that do not
        say: they predate the field)."""
        return self.describe().max_draft_tokens

    def max_context_tokens(self) -> int | None:
        """The target's context, prompt + output + draft tokens (``None`` from servers that
        do not say: they predate the field)."""
        return self.describe().max_context_tokens

    def target_name(self) -> str | None:
        """The name the server's target model was given (``serve --target``), for its
        tokenizer (``None`` from servers that do not say)."""
        return self.describe().target_name

    def generate(self, spec: SessionSpec, fused: bool = False, gamma: int = 4,
                 on_logprobs: Any = None,
                 on_prompt_logprobs: Any = None) -> Iterator[Any]:  # fmt: skip
        """Server-side baselines: committed token-id tuples as they stream in (their
        log-probabilities, a centralized session's ``logprobs``, to ``on_logprobs`` first;
        its ``prompt_logprobs``, with the first chunk, to ``on_prompt_logprobs`` before them)
        up to the chunk marked ``finished``, each within ``timeout_s`` of asking for it, else
        the call is cancelled, ``UNAVAILABLE``; a stream left unfinished is cancelled there."""
        request = pb.GenerateRequest(
            session=spec_to_proto(check_uint32s(spec)),
            mode=pb.MODE_FUSED if fused else pb.MODE_CENTRALIZED,
            gamma=gamma,
        )
        num_prompt = len(spec.prompt_token_ids) - 1
        for chunk in self._chunks(lambda: self._stub.Generate(request, metadata=self._metadata)):
            if on_prompt_logprobs and (prompt := logprobs_from_proto(chunk, num_prompt, PROMPT)):
                on_prompt_logprobs(prompt)
            if on_logprobs and (logprobs := logprobs_from_proto(chunk, len(chunk.token_ids))):
                on_logprobs(logprobs)
            yield tuple(chunk.token_ids)
            if chunk.finished:
                return

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        """A run of fused rounds (:mod:`edgespec.runtime.server.fused_run`), round by round as the
        server streams them, each within ``timeout_s`` of asking for it as :meth:`generate`'s
        chunks (a run lasts as long as its rounds; a server gone silent ends it)."""
        prefix_len = call.prefix_len
        message = fused_call_to_proto(call)
        for chunk in self._chunks(lambda: self._stub.RunFused(message, metadata=self._metadata)):
            fused_round = fused_round_from_proto(chunk, prefix_len)
            prefix_len += len(fused_round.reply.outcome.committed_token_ids)
            yield fused_round

    def _chunks(self, start: Callable[[], Any]) -> Iterator[Any]:
        """The messages of the server-streaming call ``start()`` makes, each waited for at
        most ``timeout_s`` (:class:`ChunkDeadline`: the call cancelled, ``UNAVAILABLE``);
        a stream left unfinished is cancelled on the server too."""
        try:
            call = start()
        except grpc.RpcError as exc:  # gRPC's own report errors as the stream is read
            raise self._failure(exc) from exc
        with ChunkDeadline(call.cancel, self._timeout_s) as deadline:
            try:
                while (chunk := next_chunk(call, deadline)) is not None:
                    yield chunk
            except grpc.RpcError as exc:
                if deadline.fired:
                    raise RequestError(ErrorCode.UNAVAILABLE, f"{DEADLINE_EXCEEDED}: no chunk "
                                       f"from the server within {self._timeout_s:g} s: the "
                                       "stream was cancelled") from exc  # fmt: skip
                raise self._failure(exc) from exc
            finally:
                call.cancel()  # a no-op once the stream ended; else the server stops

    def close_channel(self) -> None:
        self._channel.close()
