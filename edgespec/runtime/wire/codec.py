"""Protobuf ⇄ runtime records (no grpc here: ``edgespec_pb2`` needs only protobuf)."""

from __future__ import annotations

import importlib
from dataclasses import asdict
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.core.types import FloatArray, SamplingParams, VerifyResult
from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    PROTOCOL_VERSION,
    SemanticSpec,
    ServerStats,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
    VerifyReply,
)
from edgespec.runtime.validation import check_batch_group, check_client_times, check_identifier
from edgespec.runtime.wire.draft_probs import compact_rows, probs_from_proto
from edgespec.runtime.wire.logprob_codec import PROMPT, logprobs_from_proto, logprobs_to_proto
from edgespec.runtime.wire.payloads import payloads_from_proto

# generated stubs (see proto/edgespec.proto for the command); untyped, hence Any
pb: Any = importlib.import_module("edgespec.runtime.proto.edgespec_pb2")

_F16_MAX = float(np.finfo(np.float16).max)


def spec_to_proto(spec: SessionSpec) -> Any:
    s = spec.sampling
    sampling = pb.Sampling(
        temperature=s.temperature,
        top_p=s.top_p,
        max_new_tokens=s.max_new_tokens,
        top_k=s.top_k,
        min_p=s.min_p,
        ignore_eos=s.ignore_eos,
        logit_bias=dict(s.logit_bias),
        repetition_penalty=s.repetition_penalty,
        frequency_penalty=s.frequency_penalty,
        presence_penalty=s.presence_penalty,
        stop_token_ids=list(s.stop_token_ids),
        min_tokens=s.min_tokens,
    )
    if s.seed is not None:
        sampling.seed = s.seed
    if s.logprobs is not None:
        sampling.logprobs = s.logprobs
    if s.prompt_logprobs is not None:
        sampling.prompt_logprobs = s.prompt_logprobs
    msg = pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id=spec.session_id,
        client_id=spec.client_id,
        prompt_token_ids=list(spec.prompt_token_ids),
        sampling=sampling,
        slo_class=spec.slo_class,
        return_hidden=spec.return_hidden,
        verification_rule=spec.verification_rule,
        num_prior_output_tokens=spec.num_prior_output_tokens,
    )
    if spec.semantic is not None:
        o = spec.semantic
        if o.threshold < 0:
            raise ValueError(f"semantic threshold {o.threshold} is negative")
        msg.semantic.CopyFrom(pb.SemanticOptions(**asdict(o)))  # the fields' names, one to one
    return msg


def spec_from_proto(msg: Any) -> SessionSpec:
    check_identifier("session_id", msg.session_id)
    if msg.protocol_version != PROTOCOL_VERSION:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"protocol version {msg.protocol_version} not supported; server speaks "
            f"{PROTOCOL_VERSION}",
        )
    if not msg.session_id:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "session_id is empty")
    check_identifier("client_id", msg.client_id)
    check_identifier("slo_class", msg.slo_class)
    check_identifier("verification_rule", msg.verification_rule)
    s = msg.sampling
    try:
        sampling = SamplingParams(
            temperature=s.temperature,
            top_p=s.top_p if s.top_p != 0 else 1.0,  # 0 = unset; others are checked
            max_new_tokens=s.max_new_tokens,
            seed=s.seed if s.HasField("seed") else None,
            top_k=s.top_k,
            min_p=s.min_p,
            ignore_eos=s.ignore_eos,
            logit_bias=tuple(sorted(s.logit_bias.items())),
            repetition_penalty=s.repetition_penalty or 1.0,  # 0 = unset; others are checked
            frequency_penalty=s.frequency_penalty,
            presence_penalty=s.presence_penalty,
            stop_token_ids=tuple(s.stop_token_ids),
            min_tokens=s.min_tokens,
            logprobs=s.logprobs if s.HasField("logprobs") else None,
            prompt_logprobs=s.prompt_logprobs if s.HasField("prompt_logprobs") else None,
        )
    except ValueError as exc:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"sampling: {exc}") from exc
    return SessionSpec(
        session_id=msg.session_id,
        client_id=msg.client_id,
        prompt_token_ids=tuple(msg.prompt_token_ids),
        sampling=sampling,
        slo_class=msg.slo_class or "default",
        return_hidden=msg.return_hidden,
        verification_rule=msg.verification_rule or "exact",
        semantic=_semantic_from_proto(msg),
        num_prior_output_tokens=msg.num_prior_output_tokens,
    )


def _semantic_from_proto(msg: Any) -> SemanticSpec | None:
    """The session's semantic settings (checked when the rule binds the session); refused
    for a session that names another rule."""
    if not msg.HasField("semantic"):
        return None
    if (msg.verification_rule or "exact") != "semantic":
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"semantic options need verification_rule 'semantic', not "
            f"{msg.verification_rule or 'exact'!r}",
        )
    o = msg.semantic
    return SemanticSpec(o.threshold, o.uplink_bps, o.per, o.rtt_s, o.draft_hidden_size)


def call_to_proto(call: VerifyCall) -> Any:
    request = pb.VerifyRequest(
        session_id=call.session_id,
        prefix_len=call.prefix_len,
        draft_token_ids=list(call.draft_token_ids),
        draft_parents=list(call.draft_parents or ()),
        draft_s=call.draft_s,
        network_s=call.network_s,
        batch_id=call.batch_id,
        batch_calls=call.batch_calls,
    )
    if (q := call.draft_probs) is not None:
        rows = q if isinstance(q, CompactProbs) else np.asarray(q, np.float32)
        sizes, ids, kept = compact_rows(rows)
        request.draft_support_sizes.extend(sizes)
        request.draft_support_ids.extend(ids)
        request.draft_probs.extend(kept)
    for name, array in call.payloads.items():
        if name == DRAFT_HIDDEN and np.ndim(array) == 2:  # float16 bytes, not NamedArray
            request.draft_hidden, request.draft_hidden_size = hidden_to_bytes(
                np.asarray(array, np.float32)
            )
            continue
        values = np.asarray(array, np.float32)
        request.payloads.add(name=name, shape=list(values.shape), values=values.ravel().tolist())
    return request


def call_from_proto(msg: Any, vocab_size: int, max_draft_tokens: int) -> VerifyCall:
    """``msg`` as a call; a compact q comes back as a :class:`CompactProbs` over
    ``vocab_size`` tokens (the server's), its sizes and ids checked and its block found
    within ``max_draft_tokens``: what a message makes the server hold stays linear in it."""
    check_identifier("session_id", msg.session_id)
    check_batch_group(msg.batch_id, msg.batch_calls)
    tokens = tuple(msg.draft_token_ids)
    probs = probs_from_proto(msg, len(tokens), vocab_size, max_draft_tokens)
    parents = tuple(msg.draft_parents) if len(msg.draft_parents) else None
    check_client_times(msg.draft_s, msg.network_s)
    return VerifyCall(
        msg.session_id,
        msg.prefix_len,
        tokens,
        probs,
        parents,
        payloads_from_proto(msg),
        draft_s=msg.draft_s,
        network_s=msg.network_s,
        batch_id=msg.batch_id,
        batch_calls=msg.batch_calls,
    )


def reply_to_proto(reply: VerifyReply) -> Any:
    r = reply.outcome.result
    hidden = reply.outcome.target_hidden
    msg = pb.VerifyResponse(
        num_drafted=r.num_drafted,
        num_accepted=r.num_accepted,
        first_rejection=-1 if r.first_rejection is None else r.first_rejection,
        extra_token=r.extra_token,
        committed_token_ids=list(reply.outcome.committed_token_ids),
        finished=reply.outcome.finished,
        queue_s=reply.queue_s,
        verify_s=reply.verify_s,
        batch_size=reply.batch_size,
        queue_depth=reply.queue_depth,
    )
    if hidden is not None:
        msg.target_hidden, msg.hidden_size = hidden_to_bytes(hidden)
        msg.target_hidden_start = reply.outcome.target_hidden_start
    if reply.outcome.accepted_nodes is not None:
        msg.accepted_nodes.extend(reply.outcome.accepted_nodes)
    if reply.outcome.hidden_request is not None:
        msg.hidden_request.extend(reply.outcome.hidden_request)
    msg.accepted_mismatches = reply.outcome.accepted_mismatches
    logprobs_to_proto(msg, reply.outcome.logprobs)
    logprobs_to_proto(msg, reply.outcome.prompt_logprobs, PROMPT)
    return msg


def hidden_to_bytes(rows: FloatArray) -> tuple[bytes, int]:
    """Hidden-state rows (rows × hidden_size) as float16 little-endian row-major bytes
    (clipped to the float16 range, so a large activation stays finite) and hidden_size."""
    if rows.ndim != 2:
        raise ValueError(f"hidden rows must be 2-D (rows x hidden_size), got shape {rows.shape}")
    half = np.clip(rows, -_F16_MAX, _F16_MAX).astype("<f2")
    return half.tobytes(), int(rows.shape[1])


def hidden_from_bytes(data: bytes, hidden_size: int) -> npt.NDArray[np.float32] | None:
    """Inverse of :func:`hidden_to_bytes` (float32 rows); empty ``data`` gives ``None``.
    Raises :class:`RequestError` when the length is not rows × hidden_size × 2 bytes."""
    if not data:
        return None
    if hidden_size <= 0 or len(data) % (2 * hidden_size):
        raise RequestError(
            ErrorCode.INTERNAL,
            f"malformed VerifyResponse: target_hidden has {len(data)} bytes, not "
            f"rows x hidden_size ({hidden_size}) x 2 (float16)",
        )
    rows = np.frombuffer(data, dtype="<f2").reshape(-1, hidden_size)
    return rows.astype(np.float32)


def reply_from_proto(
    msg: Any, draft: tuple[int, ...], prefix_len: int | None = None
) -> VerifyReply:
    """``prefix_len`` (the call's), when given, bounds the hidden rows: they may cover no
    position beyond the committed sequence."""
    n = msg.num_accepted
    nodes = tuple(msg.accepted_nodes) if len(msg.accepted_nodes) else None
    if nodes is not None and (len(nodes) != n or max(nodes) >= len(draft)):
        raise RequestError(
            ErrorCode.INTERNAL,
            f"malformed VerifyResponse: accepted_nodes {list(nodes)} do not name "
            f"num_accepted={n} of the {len(draft)} draft tokens",
        )
    result = VerifyResult(
        num_drafted=msg.num_drafted,
        num_accepted=n,
        first_rejection=None if msg.first_rejection < 0 else msg.first_rejection,
        extra_token=msg.extra_token,
        accepted_token_ids=draft[:n] if nodes is None else tuple(draft[i] for i in nodes),
    )
    committed = tuple(msg.committed_token_ids)
    hidden = hidden_from_bytes(msg.target_hidden, msg.hidden_size)
    start = msg.target_hidden_start
    if hidden is not None and prefix_len is not None:
        end = prefix_len + len(committed)
        if start + len(hidden) > end:
            raise RequestError(
                ErrorCode.INTERNAL,
                f"malformed VerifyResponse: {len(hidden)} hidden rows from position {start} "
                f"run past the {end} committed tokens",
            )
    asked = tuple(msg.hidden_request) if len(msg.hidden_request) else None
    if asked is not None and (committed or max(asked) >= len(draft)):
        raise RequestError(
            ErrorCode.INTERNAL,
            f"malformed VerifyResponse: hidden_request {list(asked)} with "
            f"{len(committed)} committed tokens for {len(draft)} draft tokens",
        )
    logprobs = logprobs_from_proto(msg, len(committed))
    prompt_logprobs = logprobs_from_proto(msg, None, PROMPT)
    outcome = VerifyOutcome(result, committed, msg.finished, 0, hidden, start, nodes, asked,
                            msg.accepted_mismatches, logprobs, prompt_logprobs)  # fmt: skip
    return VerifyReply(outcome, msg.queue_s, msg.verify_s, msg.batch_size, msg.queue_depth)


def stats_to_proto(s: ServerStats) -> Any:
    fields = {k: getattr(s, k) for k in s.__slots__ if k != "batch_size_histogram"}
    hist = [pb.BatchSizeCount(batch_size=b, count=c) for b, c in s.batch_size_histogram]
    return pb.StatsResponse(batch_sizes=hist, **fields)


def stats_from_proto(msg: Any) -> ServerStats:
    fields = {k: getattr(msg, k) for k in ServerStats.__slots__ if k != "batch_size_histogram"}
    hist = tuple((b.batch_size, b.count) for b in msg.batch_sizes)
    return ServerStats(batch_size_histogram=hist, **fields)
