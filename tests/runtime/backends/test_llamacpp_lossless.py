"""Lossless on the llama.cpp backend: distributed speculative decoding through the real
verification engine is token-identical to target-only greedy decoding, under every batch
hypothesis draws (sessions joining at different rounds, right / wrong / first-wrong / random
chains of different lengths per row, token trees of 1–7 nodes beside them, cold starts
beside follow-ups, through a small KV budget evictions and re-prefills, long contexts
prefilled 6 tokens a batch or in one pass); and so are
llama.cpp drafters and prompt-lookup clients against a loopback gRPC server. The target is
a tiny GGUF model written by the test."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.runtime.backends.llamacpp_fixtures import SKIP_REASON, VOCAB, tiny_gguf

pytest.importorskip("llama_cpp", reason=SKIP_REASON)
pytest.importorskip("gguf", reason="the tiny test model is written with the gguf package")

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.llamacpp_backend import LlamaCppTarget
from edgespec.runtime.backends.llamacpp_context import LlamaCppSettings
from edgespec.runtime.backends.llamacpp_draft import LlamaCppDraft
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.edge.drafter import GenerationResult
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart
from edgespec.runtime.wire.inprocess import speculative_generate
from tests.runtime.conftest import start_server
from tests.runtime.draft_draws import draw_draft
from tests.runtime.greedy_oracles import penalized_greedy
from tests.runtime.server.test_server import _run_clients

MAX_GAMMA = 5
SESSIONS = 6


@functools.cache
def _target() -> LlamaCppTarget:
    return LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), SESSIONS + 2, 256, threads=1))


@functools.cache
def _reference_target() -> LlamaCppTarget:
    return LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), 2, 256, threads=1))


@functools.cache
def oracle(prompt: tuple[int, ...], num_tokens: int) -> tuple[int, ...]:
    """Target-only greedy decoding, strictly one token per pass (the prompt too), on a
    context of its own; it ends at EOS (included), as the engine does."""
    target, kv, out = _reference_target(), None, []
    seq = list(prompt)
    for i, token in enumerate(seq):
        result = target.forward([ForwardItem(kv, i, (token,), 1)])[0]
        kv = result.kv
    for _ in range(num_tokens):
        nxt = int(np.argmax(result.logits[0]))
        out.append(nxt)
        if nxt in target.eos_token_ids:
            break
        result = target.forward([ForwardItem(kv, len(seq), (nxt,), 1)])[0]
        kv = result.kv
        seq.append(nxt)
    return tuple(out)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_greedy_batches_are_token_identical_to_target_only_decoding(data: st.DataObject) -> None:
    budget = data.draw(st.sampled_from([None, 24, 80]), label="kv_budget_tokens")
    parts = data.draw(st.sampled_from([None, 6]), label="prefill_part_tokens")
    engine = VerificationEngine(_target(), kv_budget_tokens=budget or 65536,
                                max_sessions=SESSIONS, prefill_part_tokens=parts)  # fmt: skip
    num = data.draw(st.integers(1, SESSIONS), label="sessions")
    prompts, joins, max_new = [], [], []
    for i in range(num):
        length = data.draw(st.integers(1, 40), label=f"s{i} prompt length")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label=f"s{i} seed"))
        prompts.append(tuple(int(t) for t in rng.integers(3, VOCAB, length)))
        joins.append(data.draw(st.integers(0, 3), label=f"s{i} joins at round"))
        max_new.append(data.draw(st.integers(1, 10), label=f"s{i} max_new_tokens"))
    refs = [oracle(p, n + MAX_GAMMA + 3) for p, n in zip(prompts, max_new, strict=True)]
    opened: set[int] = set()
    for round_index in range(100):
        for i in range(num):
            if joins[i] == round_index:
                spec = SessionSpec(f"s{i}", "c", prompts[i],
                                   SamplingParams(max_new_tokens=max_new[i]))  # fmt: skip
                engine.open_session(spec)
                opened.add(i)
        live = [i for i in sorted(opened) if not engine.session_finished(f"s{i}")]
        if not live and len(opened) == num:
            break
        calls = []
        for i in live:
            if data.draw(st.integers(0, 4), label=f"r{round_index} s{i} skip") == 4:
                continue
            done = len(engine.session_tokens(f"s{i}")) - len(prompts[i])
            draft, parents = draw_draft(data, f"r{round_index} s{i}", refs[i][done:], VOCAB,
                                        MAX_GAMMA, lowest_random_id=3)  # fmt: skip
            calls.append(VerifyCall(f"s{i}", len(prompts[i]) + done, draft, draft_parents=parents))
        for call in calls:
            engine.validate(call, 32)
        while calls:  # a call whose pass was a prefill part goes in the next batch
            outcomes = engine.verify_batch(calls)
            assert all(isinstance(o, VerifyOutcome | PrefillPart) for o in outcomes), outcomes
            calls = [c for c, o in zip(calls, outcomes, strict=True) if isinstance(o, PrefillPart)]
    note(f"counters: {engine.counters()}")
    for i in range(num):
        output = engine.session_tokens(f"s{i}")[len(prompts[i]) :]
        assert output == refs[i][: max_new[i]], f"s{i} diverged"


@pytest.mark.parametrize(("seed", "gamma"), [(1, 1), (1, 3), (1, 6), (0, 4)])
def test_a_llamacpp_drafter_in_process_matches_the_target(seed: int, gamma: int) -> None:
    """A tiny model drafts on llama.cpp (seed 1: another model; seed 0: the target's own,
    whose every draft token is accepted); the engine verifies on the target."""
    drafter = LlamaCppDraft(LlamaCppSettings(tiny_gguf(seed), 1, 256, threads=1), VOCAB)
    engine = VerificationEngine(_target(), max_sessions=SESSIONS)
    for prompt in [(1, 5, 9), tuple(range(3, 40))]:
        result = speculative_generate(_target(), drafter, prompt, gamma,
                                      SamplingParams(max_new_tokens=20), engine)  # fmt: skip
        assert result.output_token_ids == oracle(prompt, 20)
        if seed == 0:
            assert result.request.num_rounds == 4  # 20 tokens, γ + 1 = 5 a round


def test_concurrent_grpc_clients_drafting_on_llamacpp_match_the_target() -> None:
    server = start_server(_target(), max_sessions=SESSIONS)  # type: ignore[arg-type]
    try:
        prompts = [tuple((5 * i + 3 * j * j) % 61 + 3 for j in range(n))
                   for i, n in enumerate((4, 17, 29, 41))]  # fmt: skip

        def drafter(i: int) -> LlamaCppDraft | NgramDrafter:
            if i % 2:
                return NgramDrafter()
            return LlamaCppDraft(LlamaCppSettings(tiny_gguf(1), 1, 256, threads=1), VOCAB)

        results = _run_clients(server.port, None, prompts, make_drafter=drafter,
                               max_new_tokens=16, gammas=[1, 2, 4, 5])  # fmt: skip
        for i, (result, prompt) in enumerate(zip(results, prompts, strict=True)):
            assert isinstance(result, GenerationResult), result
            assert result.output_token_ids == oracle(prompt, 16), f"client {i} diverged"
    finally:
        server.stop(grace_s=0)


@pytest.mark.slow
def test_gemma_sessions_crossing_the_sliding_window_match_target_only_decoding() -> None:
    """Real Gemma 3 270M (512-token sliding window, swa_full): two sessions whose contexts
    cross the window while they share passes, drafting right and wrong tokens (rejections
    trim the sequences across the window edge), against target-only greedy decoding."""
    from edgespec.models.registry import model_file
    from edgespec.runtime.wire.inprocess import target_greedy_decode

    target = LlamaCppTarget(LlamaCppSettings(model_file("gemma3-270m"), 4, 1024, threads=1))
    rng = np.random.default_rng(5)
    prompts = [tuple(int(t) for t in rng.integers(100, 20000, n)) for n in (500, 506)]
    refs = [target_greedy_decode(target, p, 24) for p in prompts]
    engine = VerificationEngine(target, max_sessions=4)
    for i, prompt in enumerate(prompts):
        engine.open_session(SessionSpec(f"g{i}", "c", prompt, SamplingParams(max_new_tokens=24)))
    for round_index in range(40):
        calls = []
        for i, prompt in enumerate(prompts):
            if engine.session_finished(f"g{i}"):
                continue
            done = len(engine.session_tokens(f"g{i}")) - len(prompt)
            right = refs[i][done : done + 1 + (round_index + i) % 4]
            draft = right if round_index % 3 else (*right[:-1], (right[-1] + 1) % VOCAB + 100)
            calls.append(VerifyCall(f"g{i}", len(prompt) + done, draft))
        if not calls:
            break
        assert all(isinstance(o, VerifyOutcome) for o in engine.verify_batch(calls))
    for i, prompt in enumerate(prompts):
        assert engine.session_tokens(f"g{i}")[len(prompt) :] == refs[i]


def test_the_targets_own_llamacpp_draft_is_accepted_whole_under_penalties() -> None:
    """The drafter shapes its rows as the request asks (runtime/backends/draft_shaping.py):
    the target's own model, drafting under a repetition penalty and a bias, has every token
    accepted (unshaped, it proposes the repeats the penalty turns the target from)."""
    drafter = LlamaCppDraft(LlamaCppSettings(tiny_gguf(0), 1, 256, threads=1), VOCAB)
    sampling = SamplingParams(max_new_tokens=20, repetition_penalty=2.0, frequency_penalty=1.0,
                              logit_bias=((11, 2.0),))  # fmt: skip
    result = speculative_generate(_target(), drafter, (1, 5, 9), 4, sampling)
    expected = penalized_greedy(_target(), (1, 5, 9), (2.0, 1.0, 0.0), 20, ((11, 2.0),))
    assert result.output_token_ids == expected != oracle((1, 5, 9), 20)
    assert result.request.num_accepted == result.request.num_drafted == 16
