"""In-process use of the runtime without gRPC: speculative decoding and reference decoding.

:func:`speculative_generate` runs the exact drafter loop the gRPC client runs, against
an :class:`~edgespec.runtime.server.engine.VerificationEngine` in the same process (one
session, batch of one). :func:`target_greedy_decode` is plain autoregressive decoding on
a target backend, the reference that lossless speculative output must equal token for token.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.base import DraftBackend, ForwardItem, TargetBackend
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart


class LocalVerifier:
    """:class:`~edgespec.runtime.edge.drafter.Verifier` calling an engine directly."""

    def __init__(self, engine: VerificationEngine, max_draft_tokens: int = 64) -> None:
        self.engine = engine
        self._max_draft = max_draft_tokens

    def open(self, spec: SessionSpec) -> None:
        self.engine.open_session(spec)

    def verify(self, call: VerifyCall) -> VerifyReply:
        self.engine.validate(call, self._max_draft)
        start = time.perf_counter()
        outcome = self.engine.verify_batch([call])[0]
        while isinstance(outcome, PrefillPart):  # a prefill in parts: its passes, one by one
            outcome = self.engine.verify_batch([call])[0]
        if isinstance(outcome, RequestError):
            raise outcome
        return VerifyReply(outcome, 0.0, time.perf_counter() - start, 1)

    def close(self, session_id: str) -> None:
        self.engine.close_session(session_id)


def speculative_generate(
    target: TargetBackend,
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    gamma: int | WindowPolicy = 4,
    sampling: SamplingParams | None = None,
    engine: VerificationEngine | None = None,
    stop: DraftStopPolicy | None = None,
) -> GenerationResult:
    """Speculative decoding with draft and target in this process (fused mode); ``stop``:
    a stop predictor ending each block at its first predicted rejection (γ is K_max)."""
    window = StaticWindow(gamma) if isinstance(gamma, int) else gamma
    verifier = LocalVerifier(engine if engine is not None else VerificationEngine(target))
    drafter.reset()
    return generate(
        verifier,
        drafter,
        prompt_ids,
        sampling if sampling is not None else SamplingParams(),
        DraftOptions(session_id=f"local-{uuid.uuid4().hex[:8]}"),
        window,
        stop=stop,
    )


def target_greedy_decode(
    target: TargetBackend, prompt_ids: Sequence[int], max_new_tokens: int
) -> tuple[int, ...]:
    """Target-only greedy decoding: one token per forward pass on its own KV cache,
    stopping at EOS (included) or ``max_new_tokens``."""
    kv, kv_len = None, 0
    pending = tuple(prompt_ids)
    output: list[int] = []
    while len(output) < max_new_tokens:
        out = target.forward([ForwardItem(kv, kv_len, pending, 1)])[0]
        kv, kv_len = out.kv, kv_len + len(pending)
        token = out.rows.argmax()[0]
        output.append(token)
        if token in target.eos_token_ids:
            break
        pending = (token,)
    return tuple(output)
