"""A ``HealthResponse`` as the runtime's :class:`~edgespec.runtime.messages.ServerHealth`
(protobuf only, no grpc): what a client learns of its server before anything loads. The
servicer fills the reply (``Health`` in :mod:`edgespec.runtime.wire.grpc_server`)."""

from __future__ import annotations

from typing import Any

from edgespec.runtime.messages import ServerHealth


def health_from_proto(msg: Any) -> ServerHealth:
    """A ``HealthResponse`` as :class:`ServerHealth` (zero and empty fields: not said)."""
    return ServerHealth(
        serving=bool(msg.serving),
        vocab_size=int(msg.vocab_size),
        target_name=str(msg.target) or None,
        max_draft_tokens=int(msg.max_draft_tokens) or None,
        max_context_tokens=int(msg.max_context_tokens) or None,
        slo_classes=frozenset(msg.slo_classes) or None,
        max_sessions_per_client=int(msg.max_sessions_per_client) or None,
        numerics=str(msg.numerics) or None,
        runs_fused_rounds=(
            bool(msg.runs_fused_rounds) if msg.HasField("runs_fused_rounds") else None
        ),
        semantic_head_sha256=str(msg.semantic_head_sha256) or None,
    )
