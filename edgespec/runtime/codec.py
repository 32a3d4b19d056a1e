"""Protobuf ⇄ runtime records (no grpc here: ``edgespec_pb2`` needs only protobuf)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    PROTOCOL_VERSION,
    ServerStats,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
    VerifyReply,
)

# generated stubs (see proto/edgespec.proto for the command); untyped, hence Any
pb: Any = importlib.import_module("edgespec.runtime.proto.edgespec_pb2")


def spec_to_proto(spec: SessionSpec) -> Any:
    s = spec.sampling
    sampling = pb.Sampling(
        temperature=s.temperature, top_p=s.top_p, max_new_tokens=s.max_new_tokens
    )
    if s.seed is not None:
        sampling.seed = s.seed
    return pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id=spec.session_id,
        client_id=spec.client_id,
        prompt_token_ids=list(spec.prompt_token_ids),
        sampling=sampling,
        slo_class=spec.slo_class,
    )


def spec_from_proto(msg: Any) -> SessionSpec:
    if msg.protocol_version != PROTOCOL_VERSION:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"protocol version {msg.protocol_version} not supported; server speaks "
            f"{PROTOCOL_VERSION}",
        )
    if not msg.session_id:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "session_id is empty")
    s = msg.sampling
    try:
        sampling = SamplingParams(
            temperature=s.temperature,
            top_p=s.top_p if s.top_p > 0 else 1.0,
            max_new_tokens=s.max_new_tokens,
            seed=s.seed if s.HasField("seed") else None,
        )
    except ValueError as exc:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"sampling: {exc}") from exc
    return SessionSpec(
        session_id=msg.session_id,
        client_id=msg.client_id,
        prompt_token_ids=tuple(msg.prompt_token_ids),
        sampling=sampling,
        slo_class=msg.slo_class or "default",
    )


def call_from_proto(msg: Any) -> VerifyCall:
    tokens = tuple(msg.draft_token_ids)
    probs = None
    if len(msg.draft_probs):
        flat = np.asarray(msg.draft_probs, dtype=np.float32)
        if not tokens or flat.size % len(tokens):
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"draft_probs has {flat.size} values, not a multiple of {len(tokens)} tokens",
            )
        probs = flat.reshape(len(tokens), -1)
    return VerifyCall(msg.session_id, msg.prefix_len, tokens, probs)


def reply_to_proto(reply: VerifyReply) -> Any:
    r = reply.outcome.result
    return pb.VerifyResponse(
        num_drafted=r.num_drafted,
        num_accepted=r.num_accepted,
        first_rejection=-1 if r.first_rejection is None else r.first_rejection,
        extra_token=r.extra_token,
        committed_token_ids=list(reply.outcome.committed_token_ids),
        finished=reply.outcome.finished,
        queue_s=reply.queue_s,
        verify_s=reply.verify_s,
        batch_size=reply.batch_size,
    )


def reply_from_proto(msg: Any, draft: tuple[int, ...]) -> VerifyReply:
    n = msg.num_accepted
    result = VerifyResult(
        num_drafted=msg.num_drafted,
        num_accepted=n,
        first_rejection=None if msg.first_rejection < 0 else msg.first_rejection,
        extra_token=msg.extra_token,
        accepted_token_ids=draft[:n],
    )
    outcome = VerifyOutcome(result, tuple(msg.committed_token_ids), msg.finished, 0)
    return VerifyReply(outcome, msg.queue_s, msg.verify_s, msg.batch_size)


def stats_to_proto(s: ServerStats) -> Any:
    fields = {k: getattr(s, k) for k in s.__slots__ if k != "batch_size_histogram"}
    hist = [pb.BatchSizeCount(batch_size=b, count=c) for b, c in s.batch_size_histogram]
    return pb.StatsResponse(batch_sizes=hist, **fields)


def stats_from_proto(msg: Any) -> ServerStats:
    fields = {k: getattr(msg, k) for k in ServerStats.__slots__ if k != "batch_size_histogram"}
    hist = tuple((b.batch_size, b.count) for b in msg.batch_sizes)
    return ServerStats(batch_size_histogram=hist, **fields)
