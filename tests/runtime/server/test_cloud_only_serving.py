"""Cloud-only fused rounds over loopback gRPC (``--fused-rounds cloud_only``, no ``--draft``):
token-identical to target-only decoding whatever the window decides, each fused round
recorded as fused with its decision's γ, 0 drafted and 1 committed; seeded sampling;
the fused baseline; the one draft forward per round of ``--cloud-only-draft-pass``; a
semantic session's fused rounds."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.semantic import SemanticRequest
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.semantic_helpers import constant_head

PROMPTS = [tuple((5 * i + 3 * j) % 64 for j in range(4 + 3 * i)) for i in range(4)]
MAX_NEW = 16
CLOUD_ONLY = {"fused_rounds": "cloud_only"}
_ids = itertools.count()


class DecisionScript:
    """Answers ``script[i]`` at its i-th consultation (then distributed γ 2), recording what
    it was shown and whether on the main thread (the device) or a server worker."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.script: tuple[WindowDecision, ...] = ()
        self.seen: list[WindowObservation] = []
        self.on_device: list[bool] = []

    def reset(self, script: Sequence[WindowDecision]) -> None:
        self.script, self.seen, self.on_device = tuple(script), [], []

    def decision(self, index: int) -> WindowDecision:
        return self.script[index] if index < len(self.script) else WindowDecision(2)

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        with self._lock:
            decision = self.decision(len(self.seen))
            self.seen.append(obs)
            self.on_device.append(threading.current_thread() is threading.main_thread())
        return decision


@pytest.fixture
def servers(target: TransformersTarget) -> Iterator[Any]:
    started: list[ServerThread] = []

    def make(**kwargs: Any) -> ServerThread:
        server = start_server(target, **kwargs)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop(grace_s=0)


def _check_rounds(result: GenerationResult, policy: DecisionScript) -> None:
    """Round i ran as decision i said; a fused round drafted nothing and committed one
    token; each observation shows the previous decision's γ and mode; the consultation
    after a fused round ran on the server."""
    rounds = result.rounds
    assert len(policy.seen) == len(rounds)
    for i, r in enumerate(rounds):
        decision = policy.decision(i)
        assert r.fused == decision.fused
        if r.fused:
            assert (r.num_drafted, r.num_accepted, r.num_committed) == (0, 0, 1)
    for i, obs in enumerate(policy.seen[1:], start=1):
        before = policy.decision(i - 1)
        assert (obs.previous_gamma, obs.previous_fused) == (before.gamma, before.fused)
        assert obs.last_num_accepted == rounds[i - 1].num_accepted
    assert policy.on_device == [i == 0 or not rounds[i - 1].fused for i in range(len(rounds))]


def test_cloud_only_switching_is_target_decoding_with_the_exact_decisions(
    servers: Any, target: TransformersTarget, draft_model: Any
) -> None:
    policy = DecisionScript()
    server = servers(window=policy, **CLOUD_ONLY)  # no draft_factory: no --draft
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    references = {p: target_greedy_decode(target, p, MAX_NEW) for p in PROMPTS}
    decisions = st.builds(WindowDecision, st.integers(1, 6), st.booleans())

    @settings(max_examples=8, deadline=None, derandomize=True)
    @given(script=st.lists(decisions, min_size=1, max_size=12), prompt=st.sampled_from(PROMPTS))
    def check(script: list[WindowDecision], prompt: tuple[int, ...]) -> None:
        policy.reset(script)
        result = generate(
            verifier,
            TransformersDraft(draft_model),
            prompt,
            SamplingParams(max_new_tokens=MAX_NEW),
            DraftOptions(session_id=f"cloud-{next(_ids)}"),
            policy,
        )
        assert result.output_token_ids == references[prompt]
        _check_rounds(result, policy)

    check()
    assert verifier.stats().num_sessions == 0


def _all_fused(verifier: RemoteVerifier, prompt: Any, sampling: SamplingParams, gamma: int) -> Any:
    return generate(
        verifier,
        NgramDrafter(),
        prompt,
        sampling,
        DraftOptions(session_id=f"fused-{next(_ids)}"),
        StaticWindow(gamma, fused=True),
    )


def _baseline(verifier: RemoteVerifier, prompt: Any, sampling: SamplingParams, fused: bool) -> Any:
    spec = SessionSpec(f"base-{next(_ids)}", "c", prompt, sampling)
    return tuple(t for chunk in verifier.generate(spec, fused=fused, gamma=3) for t in chunk)


@pytest.mark.parametrize(("seed", "gamma"), [(1, 1), (2, 3), (7, 5)])
def test_seeded_sampling_in_cloud_only_rounds_is_target_only_sampling(
    servers: Any, seed: int, gamma: int
) -> None:
    """Every round fused (the device's window and the server's): the session's seeded
    stream draws what target-only decoding (the centralized baseline) draws; so does
    the whole-request fused baseline."""
    server = servers(window=StaticWindow(gamma, fused=True), **CLOUD_ONLY)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    sampling = SamplingParams(max_new_tokens=MAX_NEW, temperature=0.9, seed=seed)
    prompt = PROMPTS[seed % len(PROMPTS)]
    centralized = _baseline(verifier, prompt, sampling, fused=False)
    result = _all_fused(verifier, prompt, sampling, gamma)
    assert result.output_token_ids == centralized and len(centralized) == MAX_NEW
    assert all(r.fused and r.num_drafted == 0 for r in result.rounds)
    assert _baseline(verifier, prompt, sampling, fused=True) == centralized


def test_the_greedy_fused_baseline_without_a_draft_is_target_decoding(
    servers: Any, target: TransformersTarget
) -> None:
    verifier = RemoteVerifier(f"127.0.0.1:{servers(**CLOUD_ONLY).port}")
    for prompt in PROMPTS:
        greedy = SamplingParams(max_new_tokens=MAX_NEW)
        assert _baseline(verifier, prompt, greedy, fused=True) == target_greedy_decode(
            target, prompt, MAX_NEW
        )


def test_the_draft_pass_runs_one_draft_forward_per_round(
    servers: Any, target: TransformersTarget, draft_model: Any
) -> None:
    forwards: list[int] = []
    hook = draft_model.register_forward_hook(lambda *_: forwards.append(1))
    try:
        server = servers(
            draft_factory=lambda: TransformersDraft(draft_model),
            window=StaticWindow(4, fused=True),
            cloud_only_draft_pass=True,
            **CLOUD_ONLY,
        )
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        greedy = SamplingParams(max_new_tokens=MAX_NEW)
        result = _all_fused(verifier, PROMPTS[1], greedy, 4)
        run_forwards = len(forwards)
        baseline = _baseline(verifier, PROMPTS[2], greedy, fused=True)
    finally:
        hook.remove()
    assert result.output_token_ids == target_greedy_decode(target, PROMPTS[1], MAX_NEW)
    assert len(result.rounds) == MAX_NEW and run_forwards == MAX_NEW
    assert all(r.fused and r.num_drafted == 0 and r.draft_s > 0 for r in result.rounds)
    assert baseline == target_greedy_decode(target, PROMPTS[2], MAX_NEW)
    assert len(forwards) - run_forwards == MAX_NEW  # the baseline's rounds too


def test_a_semantic_sessions_cloud_only_rounds_are_target_decoding(
    servers: Any, target: TransformersTarget, draft_model: Any
) -> None:
    """A head that never rejects would commit the draft's own tokens: cloud-only rounds
    have none to judge, and the server has no draft whose hidden states it could read."""
    server = servers(
        rules=semantic_rules(constant_head(-20.0)), window=StaticWindow(3, True), **CLOUD_ONLY
    )
    result = generate(
        RemoteVerifier(f"127.0.0.1:{server.port}"),
        TransformersDraft(draft_model),
        PROMPTS[3],
        SamplingParams(max_new_tokens=MAX_NEW),
        DraftOptions(session_id="semantic"),
        StaticWindow(3, fused=True),
        semantic=SemanticRequest(12, 20e6, upload="fh"),
    )
    assert result.output_token_ids == target_greedy_decode(target, PROMPTS[3], MAX_NEW)
    assert all(r.fused and (r.num_drafted, r.num_committed) == (0, 1) for r in result.rounds)
