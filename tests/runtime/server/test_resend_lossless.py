"""Lossless whatever becomes of a verify call's first sending (hypothesis draws it): the
reply lost and the call sent again (a replay of the committed round), the caller gone after
a drawn delay and the call sent again (dropped while queued, taken over during its pass or
between prefill parts, or replayed after it), or sent twice at once (the second takes the
first over). Two greedy sessions through the server's scheduler, one with a prompt long
enough for prefill in parts when the draw asks for parts; the oracle is target-only greedy
decoding."""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.inprocess import target_greedy_decode

PROMPTS = {"long": tuple((7 * i + 3) % 64 for i in range(30)), "short": (5, 9, 2, 6)}
MAX_NEW = 10
FATES = ("plain", "lost-reply", "left", "twice")


async def _send(
    service: VerificationService, call: VerifyCall, fate: str, delay_s: float
) -> VerifyReply:
    """``call``'s reply after its first sending met ``fate``."""
    if fate == "lost-reply":
        await service.verify(call)  # its reply lost on the way
    elif fate in ("left", "twice"):
        first = asyncio.ensure_future(service.verify(call))
        await asyncio.sleep(delay_s)
        if fate == "left":
            first.cancel()
        else:
            second = await service.verify(call)
            with contextlib.suppress(RequestError):
                await first  # took over (FAILED_PRECONDITION) or already answered
            return second
        with contextlib.suppress(asyncio.CancelledError, RequestError):
            await first
    return await service.verify(call)


async def _client(
    service: VerificationService, sid: str, gamma: int, fates: list[str], delays: list[float]
) -> tuple[int, ...]:
    prompt = PROMPTS[sid]
    tokens, drafter, rng = list(prompt), NgramDrafter(max_ngram=3), np.random.default_rng(0)
    for i in range(100):
        draft = tuple(drafter.propose(tokens, gamma, 0.0, rng).token_ids)
        call = VerifyCall(sid, len(tokens), draft)
        reply = await _send(service, call, fates[i % len(fates)], delays[i % len(delays)])
        tokens.extend(reply.outcome.committed_token_ids)
        if reply.outcome.finished:
            return tuple(tokens[len(prompt) :])
    raise AssertionError(f"{sid} did not finish in 100 rounds")


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    fates=st.lists(st.sampled_from(FATES), min_size=1, max_size=8),
    delays=st.lists(st.sampled_from([0.0, 0.001, 0.003, 0.01]), min_size=1, max_size=4),
    gamma=st.integers(1, 4),
    parts=st.sampled_from([None, 6]),
)
def test_every_fate_of_a_first_sending_decodes_token_identically(
    target: TransformersTarget, fates: list[str], delays: list[float], gamma: int, parts: int | None
) -> None:
    async def scenario() -> dict[str, tuple[int, ...]]:
        config = from_dict(ServerConfig, {"prefill_part_tokens": parts})
        engine = VerificationEngine(target, prefill_part_tokens=parts)
        service = VerificationService(engine, config, FcfsBatching())
        for sid, prompt in PROMPTS.items():
            service.open_session(
                SessionSpec(sid, sid, prompt, SamplingParams(max_new_tokens=MAX_NEW))
            )
        await service.start()
        try:
            outputs = await asyncio.gather(
                *(_client(service, sid, gamma, fates, delays) for sid in PROMPTS)
            )
        finally:
            await service.stop()
        return dict(zip(PROMPTS, outputs, strict=True))

    outputs = asyncio.run(scenario())
    for sid, prompt in PROMPTS.items():
        assert outputs[sid] == target_greedy_decode(target, prompt, MAX_NEW), sid
