"""The batched edge drafting server (:mod:`edgespec.runtime.edge.drafting_server`) against a
loopback verification server on a tiny target: every session's output equals target-only
greedy decoding, pipelined or not, whatever the batch size, prompt lengths and finish
times; a planner's batches run in its order; bad settings are refused before a session
opens. The batched draft: test_drafting_server_batched_draft.py; the command:
test_drafting_server_command.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.config import ConfigError
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.batched_draft import BatchedDraftModel
from edgespec.runtime.edge.drafting_results import DraftingServerResult
from edgespec.runtime.edge.drafting_server import run_drafting_server
from edgespec.runtime.testing import VOCAB
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server

EOS = 1  # has no special meaning to the tiny target unless its backend is told so


def _both(
    verifier: RemoteVerifier, draft: BatchedDraftModel, prompts: Sequence[Sequence[int]], **kw: Any
) -> tuple[DraftingServerResult, DraftingServerResult]:
    plain = run_drafting_server(verifier, draft, prompts, pipelined=False, **kw)
    piped = run_drafting_server(verifier, draft, prompts, pipelined=True, **kw)
    return plain, piped


prompt_lists = st.lists(
    st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=9), min_size=1, max_size=5
)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(
    prompts=prompt_lists,
    batch_size=st.integers(1, 4),
    gamma=st.integers(1, 4),
    max_new=st.integers(1, 10),
)
def test_outputs_equal_target_greedy_decoding_pipelined_or_not(
    verifier: RemoteVerifier,
    batched: BatchedDraftModel,
    target: TransformersTarget,
    prompts: list[list[int]],
    batch_size: int,
    gamma: int,
    max_new: int,
) -> None:
    reference = tuple(target_greedy_decode(target, p, max_new) for p in prompts)
    kw = {"batch_size": batch_size, "gamma": gamma, "max_new_tokens": max_new}
    plain, piped = _both(verifier, batched, prompts, **kw)
    assert plain.output_token_ids == reference
    assert piped.output_token_ids == reference
    assert plain.num_steps == piped.num_steps  # the same rounds, only overlapped
    assert plain.num_draft_passes == piped.num_draft_passes


def test_pipelined_and_not_are_identical_round_for_round(
    verifier: RemoteVerifier, batched: BatchedDraftModel
) -> None:
    prompts = [(3, 4, 5), (9, 8, 7, 6, 5, 4), (11,), (20, 21), (30, 31, 32, 33), (40,)]
    kw = {"batch_size": 2, "gamma": 3, "max_new_tokens": 12}
    plain, piped = _both(verifier, batched, prompts, **kw)
    assert plain.output_token_ids == piped.output_token_ids
    assert [s.num_rounds for s in plain.sessions] == [s.num_rounds for s in piped.sessions]
    assert [len(o) for o in piped.output_token_ids] == [12] * 6
    assert (plain.pipelined, piped.pipelined) == (False, True)
    summary = piped.summary()
    assert summary["num_output_tokens"] == 72 and summary["tokens_per_s"] > 0
    assert 0 < summary["accepted_per_round"] <= 3


def test_sessions_of_different_lengths_and_finish_times_share_batches(
    target_model: Any, draft_model: Any
) -> None:
    """A target whose EOS ends one session early, per-session budgets (one of a single
    token: an empty block at once), prompts of 1 to 9 tokens in the same batches."""
    eos_target = TransformersTarget(target_model, eos_token_ids=frozenset({EOS}))
    prompts = [(5,), (1, 2, 3, 4, 5, 6, 7, 8, 9), (12, 13), (40, 41, 42), (7, 7)]
    budgets = [14, 9, 1, 14, 6]
    free = [target_greedy_decode(eos_target, p, n) for p, n in zip(prompts, budgets, strict=True)]
    eos = free[0][3]  # session 0 meets this token at its 4th output token
    eos_target = TransformersTarget(target_model, eos_token_ids=frozenset({eos}))
    reference = tuple(
        target_greedy_decode(eos_target, p, n) for p, n in zip(prompts, budgets, strict=True)
    )
    assert len(reference[0]) <= 4 and len({len(r) for r in reference}) >= 3
    running = start_server(eos_target)
    client = RemoteVerifier(f"127.0.0.1:{running.port}")
    try:
        draft = BatchedDraftModel(draft_model)
        kw = {"batch_size": 3, "gamma": 4, "max_new_tokens": budgets}
        plain, piped = _both(client, draft, prompts, **kw)
    finally:
        client.close_channel()
        running.stop(grace_s=0)
    assert plain.output_token_ids == reference == piped.output_token_ids
    rounds = [s.num_rounds for s in piped.sessions]
    assert rounds[2] == 1 and piped.sessions[2].num_drafted == 0  # a plain target step
    assert max(rounds) == piped.num_steps > rounds[0]  # the early ones dropped out


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"gamma": 0}, "gamma"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"max_new_tokens": [4, 4]}, "max_new_tokens"),
        ({"prompts": [(1,), ()]}, "prompts"),
        ({"prompts": []}, "prompts"),
    ],
)
def test_bad_settings_are_refused_before_a_session_opens(
    kw: dict[str, Any], field: str, batched: BatchedDraftModel
) -> None:
    args: dict[str, Any] = {"batch_size": 2, "gamma": 2, "max_new_tokens": 4, "pipelined": True}
    prompts = kw.pop("prompts", [(1,), (2,), (3,)])
    with pytest.raises(ConfigError, match=f"'{field}'"):
        run_drafting_server(object(), batched, prompts, **{**args, **kw})  # type: ignore[arg-type]


def test_a_planners_batches_run_in_its_order(
    verifier: RemoteVerifier, batched: BatchedDraftModel, target: TransformersTarget
) -> None:
    # The Zhu planner (a pure policy, fed by the shared input builder) picks the batches
    # and γ; the drafting server runs them in the plan's order, and a batch leaves the
    # schedule when its sessions are done.
    from dataclasses import replace

    from edgespec.policies.contracts import PolicyContractError
    from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients
    from edgespec.policies.drafting_server.planner import PipelinePlanner, observe_tasks

    dims = ModelDims("tiny", 2, 32, 64)
    costs = PipelineCosts(
        dims, dims, StageCoefficients(1e-9, 1e-3), StageCoefficients(1e-10, 5e-3), 1e6, 0.5
    )
    prompts = [(3, 4, 5), (9,) * 7, (2, 8), (11, 12, 13, 14, 15)]
    budgets = [6, 3, 6, 2]
    obs = observe_tasks([len(p) for p in prompts], budgets, [1.0] * 4, 20e6)
    plan = PipelinePlanner(costs, max_spec_len=3).plan(obs)
    result = run_drafting_server(
        verifier, batched, prompts, plan=plan, max_new_tokens=budgets, pipelined=True
    )
    for k, prompt in enumerate(prompts):
        assert result.sessions[k].output_token_ids == tuple(
            target_greedy_decode(target, prompt, budgets[k])
        )
    assert result.gamma == plan.spec_len
    assert result.schedule[0] == tuple(range(len(plan.batches)))
    assert all(step == tuple(sorted(step)) for step in result.schedule)
    assert len(result.schedule) == result.num_steps
    with pytest.raises(ConfigError) as given_both:
        run_drafting_server(
            verifier, batched, prompts, batch_size=2, plan=plan, max_new_tokens=3,
            pipelined=True,
        )  # fmt: skip
    assert str(given_both.value) == (
        "config field 'plan': gives the batches and gamma: drop batch_size and gamma"
    )
    bad = replace(plan, batches=((0, 1), (1, 2, 3)))
    with pytest.raises(PolicyContractError) as broken:  # the planner's contract, one checker
        run_drafting_server(verifier, batched, prompts, plan=bad, max_new_tokens=3, pipelined=True)
    assert str(broken.value) == (
        "drafting plan: batches must hold each of the 4 tasks once: task 1 is in two batches"
    )
