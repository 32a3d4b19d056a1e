"""The prompt's log-probabilities a session asks for: each prompt token after the first
under the target's own row before it, scored in parts of at most SCORE_PART_TOKENS (or
the server's smaller prefill part), every position once across evictions, returned with
the first verification only (a centralized ``Generate``: its first chunk); the output stays
the target's own; refused for a reopen, a prompt the KV budget cannot hold and a fused
``Generate``; over the wire as they were."""

from __future__ import annotations

import pytest

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome, VerifyReply
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart
from edgespec.runtime.server.prompt_logprobs import SCORE_PART_TOKENS
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.codec import pb, reply_from_proto, reply_to_proto
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory
from tests.runtime.greedy_oracles import target_logprobs

LONG = tuple((7 * i + 3) % 64 for i in range(SCORE_PART_TOKENS + 72))  # two scoring parts


def _asks(num_top: int) -> SamplingParams:
    return SamplingParams(max_new_tokens=4, prompt_logprobs=num_top)


def _target() -> TransformersTarget:
    return TransformersTarget(tiny_llama(seed=1), eos_token_ids=frozenset())


def _assert_scores(
    target: TransformersTarget, prompt: tuple[int, ...], got: tuple[TokenLogprobs, ...] | None,
    num_top: int,
) -> None:  # fmt: skip
    expected = target_logprobs(target, prompt[:1], prompt[1:], num_top)
    assert got is not None and len(got) == len(prompt) - 1
    for score, (lp, top) in zip(got, expected, strict=True):
        assert score.logprob == pytest.approx(lp, abs=1e-5)
        assert [t for t, _ in score.top] == [t for t, _ in top]
        assert [v for _, v in score.top] == pytest.approx([v for _, v in top], abs=1e-5)


def _passes(engine: VerificationEngine, call: VerifyCall) -> list[PrefillPart | VerifyOutcome]:
    results: list[PrefillPart | VerifyOutcome] = []
    while not results or isinstance(results[-1], PrefillPart):
        result = engine.verify_batch([call])[0]
        assert not isinstance(result, RequestError), result
        results.append(result)
    return results


@pytest.mark.parametrize(("part_limit", "sizes"), [(None, [128, 71]), (64, [64, 64, 64, 7])])
def test_a_prompt_is_scored_in_parts_and_returned_with_the_first_verification(
    part_limit: int | None, sizes: list[int]
) -> None:
    """Parts of SCORE_PART_TOKENS (or the server's smaller limit) up to the prompt's last
    token, then the first verification as any other's; the output is the target's own."""
    target = _target()
    engine = VerificationEngine(target, prefill_part_tokens=part_limit)
    greedy = target_greedy_decode(target, LONG, 6)
    sampling = SamplingParams(max_new_tokens=6, prompt_logprobs=2, presence_penalty=1.5)
    engine.open_session(SessionSpec("s", "c", LONG, sampling))
    *parts, first = _passes(engine, VerifyCall("s", len(LONG), greedy[:3]))
    assert [p.num_forwarded for p in parts if isinstance(p, PrefillPart)] == sizes
    assert isinstance(first, VerifyOutcome)
    assert first.num_forwarded == len(LONG) + 3  # reported as the one pass it replaces
    _assert_scores(target, LONG, first.prompt_logprobs, 2)
    tokens = engine.session_tokens("s")
    second = engine.verify_batch([VerifyCall("s", len(tokens), ())])[0]
    assert isinstance(second, VerifyOutcome) and second.prompt_logprobs is None
    penalized = engine.session_tokens("s")[len(LONG) :]
    plain = VerificationEngine(target)
    penalties = SamplingParams(max_new_tokens=6, presence_penalty=1.5)
    plain.open_session(SessionSpec("p", "c", LONG, penalties))
    first_plain = plain.verify_batch([VerifyCall("p", len(LONG), greedy[:3])])[0]
    assert isinstance(first_plain, VerifyOutcome)
    plain.verify_batch([VerifyCall("p", len(LONG) + len(first_plain.committed_token_ids), ())])
    assert plain.session_tokens("p")[len(LONG) :] == penalized  # scoring changes no output


def test_a_drafter_over_grpc_gets_them_before_the_first_rounds_tokens(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """Through the scheduler (each part queued again) and the wire: the prompt's scores,
    handed on once, before any token; the output the target's own."""
    server = make_server(prefill_part_tokens=50)
    seen: list[tuple[str, int]] = []
    options = DraftOptions("g", on_prompt_logprobs=lambda v: seen.append(("prompt", len(v))))
    result = generate(RemoteVerifier(f"127.0.0.1:{server.port}"), NgramDrafter(), LONG,
                      _asks(3), options, StaticWindow(3),
                      on_tokens=lambda t: seen.append(("tokens", len(t))))  # fmt: skip
    assert result.output_token_ids == target_greedy_decode(target, LONG, 4)
    assert seen[0] == ("prompt", len(LONG) - 1) and [k for k, _ in seen].count("prompt") == 1
    service = server.service
    assert service is not None and max(b.num_new_tokens for b in service.batches) <= 50


def test_a_centralized_generate_stream_carries_them_with_its_first_chunk(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """The server's own decoding (``Generate``): the prompt's scores in the first chunk,
    handed on once before its tokens; a fused stream refuses them."""
    server = make_server(prefill_part_tokens=50)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    seen: list[tuple[str, tuple[TokenLogprobs, ...] | tuple[int, ...]]] = []
    spec = SessionSpec("c", "x", LONG, _asks(3))
    for chunk in verifier.generate(spec, on_prompt_logprobs=lambda v: seen.append(("p", v))):
        seen.append(("tokens", chunk))
    assert [k for k, _ in seen] == ["p"] + ["tokens"] * 4
    _assert_scores(target, LONG, seen[0][1], 3)  # type: ignore[arg-type]
    assert tuple(t for _, c in seen[1:] for t in c) == target_greedy_decode(target, LONG, 4)
    fused = SessionSpec("f", "x", LONG, _asks(0))
    with pytest.raises(RequestError) as refused:
        list(verifier.generate(fused, fused=True))
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    assert refused.value.message == (
        "a fused Generate returns no prompt_logprobs: run it centralized, or verify it"
    )


def test_a_one_token_prompt_has_nothing_to_score() -> None:
    engine = VerificationEngine(_target())
    engine.open_session(SessionSpec("s", "c", (5,), _asks(0)))
    (first,) = _passes(engine, VerifyCall("s", 1, ()))
    assert isinstance(first, VerifyOutcome) and first.prompt_logprobs == ()


def test_sessions_evicted_between_parts_score_every_position_once() -> None:
    """Two 40-token prompts under a 60-token budget, parts of 8: evictions make them start
    their parts again; each gets its exact scores, one per prompt token after the first."""
    target = _target()
    engine = VerificationEngine(target, kv_budget_tokens=60, prefill_part_tokens=8)
    prompts = {"a": LONG[:40], "b": tuple(reversed(LONG[:40]))}
    for sid, prompt in prompts.items():
        engine.open_session(SessionSpec(sid, "c", prompt, _asks(1)))
    outcomes: dict[str, VerifyOutcome] = {}
    for _ in range(60):
        calls = [VerifyCall(sid, 40, ()) for sid in prompts if sid not in outcomes]
        if not calls:
            break
        for call, result in zip(calls, engine.verify_batch(calls), strict=True):
            assert not isinstance(result, RequestError), result
            if isinstance(result, VerifyOutcome):
                outcomes[call.session_id] = result
    assert engine.counters().num_evictions > 0
    for sid, prompt in prompts.items():
        _assert_scores(target, prompt, outcomes[sid].prompt_logprobs, 1)


@pytest.mark.parametrize(
    ("spec", "budget", "message"),
    [
        (SessionSpec("r", "c", LONG[:8], _asks(1),
                     num_prior_output_tokens=2), 1000,
         "prompt_logprobs are returned for a session's first open only, not a reopen"),
        (SessionSpec("b", "c", LONG[:40], _asks(1)), 39,
         "prompt_logprobs need the prompt (40 tokens held) to fit the server's KV budget "
         "(39 tokens)"),
        (SessionSpec("h", "c", LONG[:40], _asks(1),
                     return_hidden=True), 79,
         "prompt_logprobs need the prompt (80 tokens held) to fit the server's KV budget "
         "(79 tokens)"),
    ],
)  # fmt: skip
def test_prompt_logprobs_a_session_cannot_have_are_refused(
    spec: SessionSpec, budget: int, message: str
) -> None:
    engine = VerificationEngine(_target(), kv_budget_tokens=budget)
    with pytest.raises(RequestError) as caught:
        engine.open_session(spec)
    assert (caught.value.code, caught.value.message) == (ErrorCode.INVALID_ARGUMENT, message)


def test_prompt_log_probabilities_cross_the_wire_and_a_miscount_is_refused() -> None:
    prompt = (TokenLogprobs(-1.5, ((2, -0.5),)), TokenLogprobs(-0.25, ((9, -0.25),)))
    outcome = VerifyOutcome(VerifyResult(0, 0, None, 3, ()), (3,), False, 1,
                            prompt_logprobs=prompt)  # fmt: skip
    msg = reply_to_proto(VerifyReply(outcome, 0.0, 0.0, 1))
    back = reply_from_proto(pb.VerifyResponse.FromString(msg.SerializeToString()), ())
    assert back.outcome.prompt_logprobs == prompt and back.outcome.logprobs is None
    del msg.top_prompt_logprobs[-1]
    with pytest.raises(RequestError) as caught:
        reply_from_proto(msg, ())
    assert caught.value.code == ErrorCode.INTERNAL
    assert caught.value.message == (
        "malformed VerifyResponse: 2 prompt_logprobs and 2 top pairs (1 each)"
    )
