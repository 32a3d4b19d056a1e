"""Token trees on the verification side: the engine's checks and accepted branch, trees over
loopback gRPC batched with chains, per-position acceptance for window policies, and the
accepted path's hidden states."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")


from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import DraftBackend, ForwardItem
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.backends.tree_draft import TreeDraft
from edgespec.runtime.edge.drafter import GenerationResult
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode
from tests.runtime.conftest import ServerFactory
from tests.runtime.server.test_server import _run_clients


def test_trees_accept_more_than_the_chain(target: TransformersTarget, draft_model: Any) -> None:
    """A tree holds the chain's tokens and more, so it never needs more rounds here."""
    sampling = SamplingParams(max_new_tokens=32)
    prompts = ([1, 2, 3, 4, 5], [9, 8, 7, 6], list(range(10, 30)), [4, 4, 4, 5])
    tree_rounds = chain_rounds = 0
    for prompt in prompts:
        tree = TreeDraft(draft_model, branching=(3, 2, 1, 1), lookup=False)
        tree_rounds += len(speculative_generate(target, tree, prompt, 4, sampling).rounds)
        chain = TransformersDraft(draft_model)
        chain_rounds += len(speculative_generate(target, chain, prompt, 4, sampling).rounds)
    assert tree_rounds < chain_rounds


def test_engine_refuses_bad_trees(target: TransformersTarget) -> None:
    engine = VerificationEngine(target)
    engine.open_session(SessionSpec("g", "c", (1, 2, 3), SamplingParams(max_new_tokens=8)))
    bad = VerifyCall("g", 3, (4, 5), draft_parents=(-1, 1))
    with pytest.raises(RequestError, match="node 1 has parent 1"):
        engine.validate(bad, 32)
    with pytest.raises(RequestError, match="3 parents for 2 tokens"):
        engine.validate(VerifyCall("g", 3, (4, 5), draft_parents=(-1, 0, 0)), 32)
    sampled = SamplingParams(temperature=0.8, max_new_tokens=8, seed=1)
    engine.open_session(SessionSpec("s", "c", (1, 2, 3), sampled))
    call = VerifyCall("s", 3, (4, 5), np.full((2, target.vocab_size), 1 / 64), (-1, -1))
    with pytest.raises(RequestError, match="a draft tree carries no draft_probs: its nodes"):
        engine.validate(call, 32)
    engine.validate(VerifyCall("s", 3, (4, 5), draft_parents=(-1, -1)), 32)  # sampled: none


def test_engine_keeps_only_the_accepted_branch(target: TransformersTarget) -> None:
    prompt = (1, 2, 3, 4)
    reference = target_greedy_decode(target, prompt, 6)
    engine = VerificationEngine(target)
    engine.open_session(SessionSpec("t", "c", prompt, SamplingParams(max_new_tokens=6)))
    wrong = (reference[0] + 1) % 64
    # node 0 is wrong, node 1 right; node 2 (under 1) right, node 3 (under 0) irrelevant
    call = VerifyCall("t", 4, (wrong, reference[0], reference[1], 9), draft_parents=(-1, -1, 1, 0))
    engine.validate(call, 32)
    outcome = engine.verify_batch([call])[0]
    assert isinstance(outcome, VerifyOutcome), outcome
    assert outcome.accepted_nodes == (1, 2)
    assert outcome.committed_token_ids == reference[:3]
    assert engine._sessions["t"].kv_len == len(prompt) + 2
    follow = VerifyCall("t", 7, (reference[3],))
    second = engine.verify_batch([follow])[0]
    assert isinstance(second, VerifyOutcome), second
    assert second.committed_token_ids == reference[3:5]  # the pruned cache is right


def test_trees_over_grpc_batched_with_chains(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    """Tree and chain clients share batches; every output equals the target's, and a tree
    client's rounds are the in-process ones (the accepted path crosses the wire)."""
    server = make_server()
    prompts = [tuple((5 * i + j) % 64 for j in range(4 + 3 * i)) for i in range(6)]
    sampling = SamplingParams(max_new_tokens=20)

    def make_drafter(i: int) -> DraftBackend:
        return TreeDraft(draft_model) if i % 2 == 0 else TransformersDraft(draft_model)

    results = _run_clients(server.port, draft_model, prompts, make_drafter, 20)
    for i, (result, prompt) in enumerate(zip(results, prompts, strict=True)):
        assert isinstance(result, GenerationResult), result
        assert result.output_token_ids == target_greedy_decode(target, prompt, 20)
        if i % 2 == 0:
            local = speculative_generate(target, TreeDraft(draft_model), prompt, 4, sampling)
            assert [r.num_accepted for r in result.rounds] == [r.num_accepted for r in local.rounds]
    assert RemoteVerifier(f"127.0.0.1:{server.port}").stats().max_batch_size > 1


def test_trees_over_grpc_errors_and_accepted_path(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("b", "c", (1, 2, 3), SamplingParams(max_new_tokens=8)))
    with pytest.raises(RequestError) as info:
        verifier.verify(VerifyCall("b", 3, (4, 5, 6), draft_parents=(-1, 0, 2)))
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "draft tree node 2 has parent 2" in str(info.value)
    ref = target_greedy_decode(target, (1, 2, 3), 3)
    draft = ((ref[0] + 1) % 64, ref[0], ref[1])
    ok = verifier.verify(VerifyCall("b", 3, draft, draft_parents=(-1, -1, 1)))
    assert ok.outcome.result.num_drafted == 2  # the tree's depth
    assert ok.outcome.accepted_nodes == (1, 2)
    assert ok.outcome.result.accepted_token_ids == ref[:2]
    assert ok.outcome.committed_token_ids == ref


def test_malformed_accepted_nodes_are_an_internal_error() -> None:
    from edgespec.runtime.wire.codec import pb, reply_from_proto

    msg = pb.VerifyResponse(num_drafted=2, num_accepted=2, first_rejection=-1, extra_token=3)
    msg.committed_token_ids.extend([4, 6, 3])
    msg.accepted_nodes.extend([0, 2])
    reply = reply_from_proto(msg, (4, 5, 6), 3)
    assert reply.outcome.result.accepted_token_ids == (4, 6)
    assert reply.outcome.accepted_nodes == (0, 2)
    msg.accepted_nodes[1] = 7
    with pytest.raises(RequestError, match="accepted_nodes \\[0, 7\\] do not name"):
        reply_from_proto(msg, (4, 5, 6), 3)


def test_window_policies_see_per_position_acceptance(
    target: TransformersTarget, draft_model: Any
) -> None:
    """A tree's acceptance is counted over its depth (the window), not its node count."""
    from edgespec.policies.interfaces import WindowDecision, WindowObservation

    class Recording:
        def __init__(self) -> None:
            self.seen: list[float | None] = []

        def next_window(self, obs: WindowObservation) -> WindowDecision:
            self.seen.append(obs.recent_acceptance)
            return WindowDecision(4)

    policy = Recording()
    sampling = SamplingParams(max_new_tokens=24)
    result = speculative_generate(target, TreeDraft(draft_model), [1, 2, 3, 4], policy, sampling)
    first = result.rounds[0]
    assert first.num_drafted > 4  # nodes sent
    assert policy.seen[1] == pytest.approx(first.num_accepted / 4)


def test_tree_verification_returns_the_accepted_paths_hidden_states(
    target: TransformersTarget,
) -> None:
    prompt = (1, 2, 3, 4)
    reference = target_greedy_decode(target, prompt, 6)
    engine = VerificationEngine(target)
    spec = SessionSpec("h", "c", prompt, SamplingParams(max_new_tokens=6), return_hidden=True)
    engine.open_session(spec)
    wrong = (reference[0] + 1) % 64
    call = VerifyCall("h", 4, (wrong, reference[0], 9, reference[1]), draft_parents=(-1, -1, 0, 1))
    outcome = engine.verify_batch([call])[0]
    assert isinstance(outcome, VerifyOutcome), outcome
    assert outcome.accepted_nodes == (1, 3)
    assert outcome.target_hidden is not None and outcome.target_hidden_start == 0
    seq = (*prompt, reference[0], reference[1])  # the prompt and the accepted path
    full = target.forward([ForwardItem(None, 0, seq, 1, want_hidden=True)])[0].hidden
    assert full is not None and outcome.target_hidden.shape == full.shape
    np.testing.assert_allclose(outcome.target_hidden, full, rtol=1e-4, atol=1e-5)
