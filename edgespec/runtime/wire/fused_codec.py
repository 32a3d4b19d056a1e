"""Protobuf ⇄ runtime records of fused runs (``RunFused``): the history snapshot, the
fused request and the streamed rounds (no grpc here, as in :mod:`edgespec.runtime.wire.codec`)."""

from __future__ import annotations

from typing import Any

from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, FusedRunEnd
from edgespec.runtime.validation import check_identifier
from edgespec.runtime.wire.codec import pb, reply_from_proto, reply_to_proto


def snapshot_to_proto(s: HistorySnapshot) -> Any:
    msg = pb.HistorySnapshot(
        recent_drafted=[d for d, _ in s.recent],
        recent_accepted=[a for _, a in s.recent],
        num_rounds=s.num_rounds,
        gamma=s.gamma,
        last_num_accepted=s.last_num_accepted,
        num_committed_total=s.num_committed_total,
        queue_depth=s.queue_depth,
        network_s=s.network_s,
        fused=s.fused,
        window_state=s.window_state,
    )
    if s.first_token_age_s is not None:
        msg.first_token_age_s = s.first_token_age_s
    return msg


def snapshot_from_proto(msg: Any) -> HistorySnapshot:
    """``INVALID_ARGUMENT`` naming the field when the snapshot is malformed."""
    if len(msg.recent_drafted) != len(msg.recent_accepted):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"history snapshot: {len(msg.recent_drafted)} recent_drafted but "
            f"{len(msg.recent_accepted)} recent_accepted",
        )
    try:
        return HistorySnapshot(
            recent=tuple(zip(msg.recent_drafted, msg.recent_accepted, strict=True)),
            num_rounds=msg.num_rounds,
            gamma=msg.gamma,
            last_num_accepted=msg.last_num_accepted,
            num_committed_total=msg.num_committed_total,
            queue_depth=msg.queue_depth,
            network_s=msg.network_s,
            fused=msg.fused,
            first_token_age_s=(
                msg.first_token_age_s if msg.HasField("first_token_age_s") else None
            ),
            window_state=tuple(msg.window_state),
        )
    except ValueError as exc:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, str(exc)) from exc


def fused_call_to_proto(call: FusedCall) -> Any:
    return pb.FusedRequest(
        session_id=call.session_id,
        prefix_len=call.prefix_len,
        gamma=call.gamma,
        history=snapshot_to_proto(call.history),
    )


def fused_call_from_proto(msg: Any) -> FusedCall:
    check_identifier("session_id", msg.session_id)
    return FusedCall(msg.session_id, msg.prefix_len, msg.gamma, snapshot_from_proto(msg.history))


def fused_round_to_proto(r: FusedRound) -> Any:
    msg = pb.FusedRoundChunk(
        gamma=r.gamma,
        draft_token_ids=list(r.draft_token_ids),
        draft_s=r.draft_s,
        verdict=reply_to_proto(r.reply),
    )
    if r.end is not None:
        msg.run_ended = True
        msg.next_gamma = 0 if r.end.next_decision is None else r.end.next_decision.gamma
        msg.history.CopyFrom(snapshot_to_proto(r.end.history))
    return msg


def fused_round_from_proto(msg: Any, prefix_len: int) -> FusedRound:
    """A streamed fused round; ``prefix_len``: the committed tokens before it (bounds the
    hidden rows, as for a verify reply). A malformed history is ``INTERNAL`` here."""
    draft = tuple(msg.draft_token_ids)
    reply = reply_from_proto(msg.verdict, draft, prefix_len)
    end = None
    if msg.run_ended:
        try:
            history = snapshot_from_proto(msg.history)
        except RequestError as exc:
            message = f"malformed FusedRoundChunk: {exc.message}"
            raise RequestError(ErrorCode.INTERNAL, message) from exc
        decision = WindowDecision(msg.next_gamma) if msg.next_gamma else None
        end = FusedRunEnd(decision, history)
    return FusedRound(msg.gamma, draft, msg.draft_s, reply, end)
