"""Lossless under every batch the engine forms (hypothesis draws the batches).

Greedy oracle: target-only greedy decoding with no cache and no padding (the model's own
forward over the whole sequence, one token per step), its rows penalized as the session
asks (repetition, frequency, presence: some sessions draw them, sampled ones too).
Sampling: a batch verifies bit-identically to the same sessions verified one at a time
with the same seeds. Each round
draws which sessions take part, how many tokens each drafts (different per row), whether
they are right, wrong, first-wrong or random, token trees beside chains, cold starts
joining follow-ups and (through a small KV budget) evictions and re-prefills, long blocks
prefilled in chunks of 7 tokens or whole, long contexts prefilled 6 tokens a batch
(server/prefill_parts) or in one pass; the targets
are tiny Llama and tiny Gemma 3 with sliding windows of 3 to 8 tokens in three layouts.
A failing example prints its draws (model, sessions, per-round drafts) to replay it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from edgespec.core.types import SamplingParams  # noqa: E402
from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome  # noqa: E402
from edgespec.runtime.server.engine import VerificationEngine  # noqa: E402
from edgespec.runtime.server.prefill_parts import PrefillPart  # noqa: E402
from edgespec.runtime.testing import VOCAB, tiny_gemma3, tiny_llama  # noqa: E402
from tests.runtime.device import TEST_DEVICE, on_test_device  # noqa: E402
from tests.runtime.draft_draws import draw_draft  # noqa: E402
from tests.runtime.greedy_oracles import OFF, Penalties, penalized  # noqa: E402

S, F = "sliding_attention", "full_attention"
MODELS: dict[str, Callable[[], Any]] = {"llama": lambda: tiny_llama(seed=0)}
for _w in range(3, 9):
    MODELS[f"gemma3-sfs-w{_w}"] = functools.partial(
        tiny_gemma3, num_layers=3, sliding_window=_w, layer_types=[S, F, S]
    )
    MODELS[f"gemma3-5to1-w{_w}"] = functools.partial(tiny_gemma3, num_layers=6, sliding_window=_w)
    MODELS[f"gemma3-all-sliding-w{_w}"] = functools.partial(
        tiny_gemma3, num_layers=2, sliding_window=_w, layer_types=[S, S]
    )
MAX_GAMMA = 5
EXAMPLES = int(os.environ.get("EDGESPEC_LOSSLESS_EXAMPLES", "60"))
"""Examples per property: 60 in `make test` (about 3 per model; the two properties take a
third of a worker's time at 100); tools/gpu_check.sh runs 100 on the device."""
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@functools.cache
def _model(key: str) -> Any:
    return on_test_device(MODELS[key]())


@functools.cache
def _target(key: str, split: bool, chunk: int) -> TransformersTarget:
    # the load-time self-checks run once per model (in its default configuration); the
    # property itself is the check of every other one
    default = (split, chunk) == (True, 2048)
    if not default:
        _target(key, True, 2048)
    return TransformersTarget(
        _model(key), split_padded_batches=split, prefill_chunk_tokens=chunk, check_masks=default
    )


@functools.cache
def oracle_greedy(
    key: str, prompt: tuple[int, ...], num_tokens: int, penalties: Penalties = OFF
) -> tuple[int, ...]:
    """Target-only greedy decoding: the whole sequence forwarded afresh for every token,
    each row penalized after the sequence so far."""
    model, seq = _model(key), list(prompt)
    with torch.inference_mode():
        for _ in range(num_tokens):
            ids = torch.tensor([seq], device=TEST_DEVICE)
            logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1].float().cpu().numpy()
            seq.append(int(np.argmax(penalized(logits, seq, len(prompt), penalties))))
    return tuple(seq[len(prompt) :])


@dataclass
class _Plan:
    prompt: tuple[int, ...]
    max_new: int
    join_round: int
    temperature: float = 0.0
    seed: int = 0
    cuts: tuple[float, int, float] = (1.0, 0, 0.0)  # top_p, top_k, min_p
    penalties: Penalties = OFF


CUTS = [(1.0, 0, 0.0), (0.9, 0, 0.0), (1.0, 5, 0.0), (0.95, 20, 0.05), (1.0, 0, 0.2)]
"""(top_p, top_k, min_p) a sampled session may draw: each row cut as it is alone."""
PENALTIES = [OFF, OFF, (1.3, 0.0, 0.0), (1.0, 0.6, 0.3), (0.8, -0.5, 1.5)]
"""(repetition, frequency, presence) a session may draw (off twice as often)."""


def _plans(data: st.DataObject, sampled: bool) -> list[_Plan]:
    num = data.draw(st.integers(1, 8), label="num_sessions")
    plans = []
    for i in range(num):
        length = data.draw(st.integers(1, 60), label=f"s{i} prompt length")
        seed = data.draw(st.integers(0, 2**16), label=f"s{i} seed")
        prompt = tuple(int(t) for t in np.random.default_rng(seed).integers(0, VOCAB, length))
        plans.append(
            _Plan(
                prompt=prompt,
                max_new=data.draw(st.integers(1, 10), label=f"s{i} max_new_tokens"),
                join_round=data.draw(st.integers(0, 3), label=f"s{i} joins at round"),
                temperature=data.draw(st.sampled_from([0.0, 0.7, 1.3]), label=f"s{i} temp")
                if sampled
                else 0.0,
                seed=seed,
                cuts=data.draw(st.sampled_from(CUTS), label=f"s{i} cuts")
                if sampled
                else (1.0, 0, 0.0),
                penalties=data.draw(st.sampled_from(PENALTIES), label=f"s{i} penalties"),
            )
        )
    return plans


def _engine(
    key: str, split: bool, budget: int | None, chunk: int, parts: int | None
) -> VerificationEngine:
    return VerificationEngine(
        _target(key, split, chunk), kv_budget_tokens=budget or 65536, prefill_part_tokens=parts
    )


def _verify(engine: VerificationEngine, calls: list[VerifyCall]) -> list[VerifyOutcome]:
    """Each call's outcome, its batch run again (without the decided calls) while a call's
    pass forwarded a prefill part."""
    outcomes: dict[int, VerifyOutcome] = {}
    waiting = list(range(len(calls)))
    while waiting:
        results = engine.verify_batch([calls[i] for i in waiting])
        for i, result in zip(waiting, results, strict=True):
            assert isinstance(result, VerifyOutcome | PrefillPart), result
            if isinstance(result, VerifyOutcome):
                outcomes[i] = result
        waiting = [i for i in waiting if i not in outcomes]
    return [outcomes[i] for i in range(len(calls))]


def _open(engine: VerificationEngine, plans: list[_Plan], i: int) -> None:
    p = plans[i]
    top_p, top_k, min_p = p.cuts if p.temperature > 0 else (1.0, 0, 0.0)
    repetition, frequency, presence = p.penalties
    sampling = SamplingParams(temperature=p.temperature, max_new_tokens=p.max_new, seed=p.seed,
                              top_p=top_p, top_k=top_k, min_p=min_p,
                              repetition_penalty=repetition, frequency_penalty=frequency,
                              presence_penalty=presence)  # fmt: skip
    engine.open_session(SessionSpec(f"s{i}", "c", p.prompt, sampling))


def _rounds(
    data: st.DataObject,
    engines: list[VerificationEngine],
    plans: list[_Plan],
    make_call: Callable[[int, int], VerifyCall],
    run: Callable[[list[VerifyCall]], None],
) -> None:
    """Rounds until every session is finished: sessions join (in every engine) at their
    round, each live one takes part unless the draw skips it, and ``run`` gets the round's
    calls."""
    opened: set[int] = set()
    for round_index in range(200):
        for i, plan in enumerate(plans):
            if plan.join_round == round_index:
                for engine in engines:
                    _open(engine, plans, i)
                opened.add(i)
        live = [i for i in sorted(opened) if not engines[0].session_finished(f"s{i}")]
        if not live and len(opened) == len(plans):
            return
        calls = [
            make_call(i, round_index)
            for i in live
            if data.draw(st.integers(0, 4), label=f"r{round_index} s{i} skip") < 4
        ]
        if calls:
            run(calls)
    raise AssertionError("sessions did not finish in 200 rounds")


def _model_and_engine(data: st.DataObject) -> tuple[str, bool, int | None, int, int | None]:
    key = data.draw(st.sampled_from(sorted(MODELS)), label="model")
    split = data.draw(st.booleans(), label="split_padded_batches")
    budget = data.draw(st.sampled_from([None, 24, 80]), label="kv_budget_tokens")
    chunk = data.draw(st.sampled_from([2048, 7]), label="prefill_chunk_tokens")
    parts = data.draw(st.sampled_from([None, 6]), label="prefill_part_tokens")
    return key, split, budget, chunk, parts


@PROPERTY
@given(data=st.data())
def test_greedy_batches_are_token_identical_to_target_only_decoding(data: st.DataObject) -> None:
    key, split, budget, chunk, parts = _model_and_engine(data)
    plans = _plans(data, sampled=False)
    references = [oracle_greedy(key, p.prompt, p.max_new + MAX_GAMMA + 2, p.penalties)
                  for p in plans]  # fmt: skip
    engine = _engine(key, split, budget, chunk, parts)

    def make_call(i: int, round_index: int) -> VerifyCall:
        tokens = engine.session_tokens(f"s{i}")
        done = len(tokens) - len(plans[i].prompt)
        draft, parents = draw_draft(data, f"r{round_index} s{i}", references[i][done:],
                                        VOCAB, MAX_GAMMA)  # fmt: skip
        return VerifyCall(f"s{i}", len(tokens), draft, draft_parents=parents)

    def run(calls: list[VerifyCall]) -> None:
        for call in calls:
            engine.validate(call, 32)
        _verify(engine, calls)

    _rounds(data, [engine], plans, make_call, run)
    note(f"counters: {engine.counters()}")
    for i, (plan, reference) in enumerate(zip(plans, references, strict=True)):
        output = engine.session_tokens(f"s{i}")[len(plan.prompt) :]
        assert output == reference[: plan.max_new], f"session s{i} diverged from the target"


def _sampled_call(
    data: st.DataObject, engine: VerificationEngine, plans: list[_Plan], i: int, round_index: int
) -> VerifyCall:
    label = f"r{round_index} s{i}"
    k = data.draw(st.integers(1, MAX_GAMMA), label=f"{label} length")
    seed = data.draw(st.integers(0, 2**16), label=f"{label} draft seed")
    rng = np.random.default_rng(seed)
    tokens = engine.session_tokens(f"s{i}")
    if plans[i].temperature == 0.0:
        return VerifyCall(f"s{i}", len(tokens), tuple(int(t) for t in rng.integers(0, VOCAB, k)))
    if data.draw(st.booleans(), label=f"{label} tree"):  # nodes proposed for certain: no q
        parents = tuple(int(rng.integers(-1, j)) for j in range(k))  # each under an earlier
        draft = tuple(int(t) for t in rng.integers(0, VOCAB, k))
        return VerifyCall(f"s{i}", len(tokens), draft, draft_parents=parents)
    probs = rng.dirichlet(np.full(VOCAB, 0.3), size=k) + 1e-6
    probs = (probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)
    draft = tuple(int(rng.choice(VOCAB, p=row / row.sum())) for row in probs)
    return VerifyCall(f"s{i}", len(tokens), draft, draft_probs=probs)


@PROPERTY
@given(data=st.data())
def test_sampled_batches_equal_the_same_sessions_verified_one_at_a_time(
    data: st.DataObject,
) -> None:
    key, split, budget, chunk, parts = _model_and_engine(data)
    plans = _plans(data, sampled=True)
    batched = _engine(key, split, budget, chunk, parts)
    alone = _engine(key, split, budget, chunk, parts)

    def make_call(i: int, round_index: int) -> VerifyCall:
        return _sampled_call(data, batched, plans, i, round_index)

    def run(calls: list[VerifyCall]) -> None:
        for call in calls:
            batched.validate(call, 32)
        together = _verify(batched, calls)
        one_by_one = [_verify(alone, [call])[0] for call in calls]
        for a, b in zip(together, one_by_one, strict=True):  # LRU evictions may differ
            assert (a.result, a.committed_token_ids, a.finished) == (
                b.result,
                b.committed_token_ids,
                b.finished,
            )

    _rounds(data, [batched, alone], plans, make_call, run)
    for i in range(len(plans)):
        assert batched.session_tokens(f"s{i}") == alone.session_tokens(f"s{i}")
