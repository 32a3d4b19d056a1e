"""A reopened session of a seeded sampling run verifies on uniforms of its own: the
server seeds a session's verification stream with the session's seed, so a reopen that
kept the run's seed would decide its rounds with the uniforms that decided the first
ones (at other positions), and the run would no longer be distributed as an
uninterrupted one."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.reconnect import reopen
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.engine import VerificationEngine
from tests.runtime.round_fakes import Clock, Verifier

SAMPLED = SamplingParams(temperature=0.8, max_new_tokens=8, seed=7)
FIRST = SessionSpec("s", "edge-0", (5, 3), SAMPLED)


def _reopened(output: tuple[int, ...], sampling: SamplingParams = SAMPLED) -> SessionSpec:
    clock = Clock()
    verifier = Verifier(clock)
    reopen(verifier, dataclasses.replace(FIRST, sampling=sampling), output, clock, 1, 1.0, 0.0)
    (spec,) = verifier.specs
    return spec


def _uniforms(engine: VerificationEngine, spec: SessionSpec) -> set[float]:
    """The first 256 uniforms of the verification stream the engine gives ``spec``."""
    engine.open_session(spec)
    return set(engine._sessions[spec.session_id].rng.random(256))


def test_a_reopened_session_draws_none_of_the_uniforms_already_used(
    target: TransformersTarget,
) -> None:
    engine = VerificationEngine(target)
    used = _uniforms(engine, FIRST)
    reopened = [_reopened(output) for output in ((), (6,), (6, 9))]
    assert [s.session_id for s in reopened] == ["s#r1.1"] * 3
    assert [(s.prompt_token_ids, s.sampling.max_new_tokens) for s in reopened] == [
        ((5, 3), 8),
        ((5, 3, 6), 7),
        ((5, 3, 6, 9), 6),
    ]
    streams = [
        _uniforms(engine, dataclasses.replace(spec, session_id=f"r{n}"))
        for n, spec in enumerate(reopened)
    ]
    assert all(used.isdisjoint(stream) for stream in streams)
    assert streams[1].isdisjoint(streams[2])


@pytest.mark.parametrize("seed", [None, 7])
def test_the_reopened_seed_is_reproducible_and_none_stays_fresh(seed: int | None) -> None:
    sampling = SamplingParams(temperature=0.8, max_new_tokens=8, seed=seed)
    first, again = _reopened((6,), sampling), _reopened((6,), sampling)
    assert first.sampling == again.sampling  # a seeded run is reproducible
    assert (first.sampling.seed is None) == (seed is None)
    assert first.sampling.seed != 7


def test_a_reopened_session_samples_as_the_first() -> None:
    """Its temperature and every cut are the first session's (the reopen had rebuilt the
    sampling field by field, and a field it did not name fell back to its default)."""
    sampling = SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=8, seed=7, top_k=5,
                              min_p=0.05)  # fmt: skip
    again = _reopened((6, 9), sampling).sampling
    assert dataclasses.replace(again, max_new_tokens=8, seed=7) == sampling
    assert again.max_new_tokens == 6


@pytest.mark.parametrize(("min_tokens", "left"), [(5, 3), (2, 0)])
def test_a_reopened_session_keeps_what_is_left_of_min_tokens(min_tokens: int, left: int) -> None:
    """As the budget: what the output so far has not yet reached (the server counts a
    session's own output), its stop ids and penalties as they were, the output counted as
    output for the penalties."""
    sampling = SamplingParams(max_new_tokens=8, min_tokens=min_tokens, stop_token_ids=(4,),
                              presence_penalty=0.5)  # fmt: skip
    again = _reopened((6, 9), sampling)
    assert again.sampling == dataclasses.replace(sampling, max_new_tokens=6, min_tokens=left)
    assert again.num_prior_output_tokens == 2


@pytest.mark.parametrize(("output", "asked"), [((), 2), ((6,), None)])
def test_a_reopen_asks_for_the_prompts_logprobs_only_before_any_output(
    output: tuple[int, ...], asked: int | None
) -> None:
    """They come with the first reply that commits a token: a reopen after it does not ask
    again (the server refuses them for a prompt holding output); one before it does."""
    sampling = SamplingParams(max_new_tokens=8, logprobs=1, prompt_logprobs=2)
    again = _reopened(output, sampling)
    assert again.sampling.prompt_logprobs == asked and again.sampling.logprobs == 1
