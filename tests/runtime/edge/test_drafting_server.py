"""The batched edge drafting server (:mod:`edgespec.runtime.edge.drafting_server`) against a
loopback verification server on a tiny target: every session's output equals target-only
greedy decoding, pipelined or not, whatever the batch size, prompt lengths and finish
times; the batched draft drafts what the single-session draft drafts (plain and
trimmed-vocabulary models); bad settings and flags get a clear error; ``edgespec
drafting-server --compare`` runs both modes and writes its JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.models.trimmed import TrimmedDraftConfig, TrimmedVocabDraft
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.batched_draft import BatchedDraftModel, DraftState
from edgespec.runtime.edge.drafting_results import DraftingServerResult
from edgespec.runtime.edge.drafting_server import run_drafting_server
from edgespec.runtime.testing import VOCAB
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_server import ServerThread
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.device import on_test_device
from tests.word_tokenizer import make_word_tokenizer

EOS = 1  # has no special meaning to the tiny target unless its backend is told so


@pytest.fixture(scope="module")
def server(target: TransformersTarget) -> Iterator[ServerThread]:
    running = start_server(target)
    yield running
    running.stop(grace_s=0)


@pytest.fixture(scope="module")
def verifier(server: ServerThread) -> Iterator[RemoteVerifier]:
    client = RemoteVerifier(f"127.0.0.1:{server.port}")
    yield client
    client.close_channel()


@pytest.fixture(scope="module")
def batched(draft_model: Any) -> BatchedDraftModel:
    return BatchedDraftModel(draft_model)


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


def _single_session_blocks(
    model: Any, contexts: Sequence[Sequence[int]], gamma: int
) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(0)
    return [TransformersDraft(model).propose(c, gamma, 0.0, rng).token_ids for c in contexts]


def _rounds_agree(model: Any, batched: BatchedDraftModel) -> None:
    """Three rounds over three sessions whose committed sequences follow the draft for a
    while, then diverge (the KV is cropped back): batched blocks = single-session ones."""
    contexts = [[3, 4, 5], [9, 8, 7, 6, 5, 4, 3], [11]]
    states = [DraftState() for _ in contexts]
    for round_index in range(3):
        gammas = [3, 1 + round_index, 2]
        blocks = batched.draft(states, contexts, gammas)
        for context, block, gamma in zip(contexts, blocks, gammas, strict=True):
            assert block == _single_session_blocks(model, [context], gamma)[0]
        for i, block in enumerate(blocks):  # accept i tokens, then a token of our own
            contexts[i] = [*contexts[i], *block[:i], (round_index * 7 + i) % VOCAB]


def test_batched_blocks_equal_single_session_drafts(draft_model: Any) -> None:
    _rounds_agree(draft_model, BatchedDraftModel(draft_model))


def _tiny_trimmed_draft(kept: Sequence[int]) -> TrimmedVocabDraft:
    config = TrimmedDraftConfig(
        draft_token_ids=list(kept), vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, bos_token_id=None, pad_token_id=None, eos_token_id=None,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(3)
        draft = TrimmedVocabDraft(config)
    with torch.no_grad():
        draft.model.embed_tokens.weight.mul_(20.0)  # well-separated argmaxes
    draft.eval()  # type: ignore[no-untyped-call]
    return on_test_device(draft)


def test_a_trimmed_vocabulary_draft_drafts_through_its_kept_head(
    verifier: RemoteVerifier, target: TransformersTarget
) -> None:
    """Inputs outside the kept vocabulary go in as "other"; blocks hold target ids of kept
    tokens only, the single-session draft's, and the output stays lossless."""
    kept = list(range(1, VOCAB, 2))
    trimmed = _tiny_trimmed_draft(kept)
    draft = BatchedDraftModel(trimmed)
    _rounds_agree(trimmed, draft)
    prompts = [(2, 4, 6), (3, 5), (8,)]
    result = run_drafting_server(
        verifier, draft, prompts, batch_size=2, gamma=3, max_new_tokens=8, pipelined=True
    )
    assert result.output_token_ids == tuple(target_greedy_decode(target, p, 8) for p in prompts)


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


CLI = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "somewhere"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--batch-size", "0"], "config field 'batch_size': must be >= 1, got 0"),
        (["--gamma", "-1"], "config field 'gamma': must be >= 1, got -1"),
        (["--num-sessions", "0"], "config field 'num_sessions': must be >= 1, got 0"),
        (["--max-new-tokens", "0"], "config field 'max_new_tokens': must be >= 1, got 0"),
        (["--compare", "--no-pipeline"], "config field 'pipeline': --compare runs both"),
    ],
)
def test_bad_flags_are_reported_before_anything_loads(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*CLI, *flags]) == 2
    assert capsys.readouterr().err.startswith(f"edgespec drafting-server: {message}")


def test_an_unreachable_server_is_one_line_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(CLI) == 1
    err = capsys.readouterr().err
    assert err.startswith("edgespec drafting-server: ") and "is an `edgespec serve` running" in err


@pytest.fixture(scope="module")
def draft_dir(tmp_path_factory: pytest.TempPathFactory, draft_model: Any) -> Path:
    """The tiny draft saved with a tokenizer (words ``w0`` … as ids 0 …)."""
    directory = tmp_path_factory.mktemp("draft")
    draft_model.save_pretrained(directory)
    make_word_tokenizer(VOCAB, fuse=False).save_pretrained(directory)
    return directory


def test_compare_runs_both_modes_and_writes_the_json(
    server: ServerThread, target: TransformersTarget, draft_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    out = tmp_path / "out" / "ds.json"
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--prompt-ids", "9"]
    argv += ["--batch-size", "2", "--gamma", "3", "--max-new-tokens", "6", "--compare"]
    assert main([*argv, "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "[not pipelined: 3 sessions in batches of 2, 18 tokens, " in err
    assert "[pipelined: 3 sessions in batches of 2, 18 tokens, " in err
    assert "x; outputs identical" in err
    report = json.loads(out.read_text())
    assert report["identical"] is True and report["speedup"] > 0
    assert set(report["runs"]) == {"not_pipelined", "pipelined"}
    assert report["settings"]["prompt_tokens"] == [3, 2, 1]
    assert report["runs"]["pipelined"]["num_output_tokens"] == 18
    assert report["runs"]["pipelined"]["server_batches"] >= 1


def test_dataset_prompts_are_tokenized_with_the_drafts_tokenizer(
    server: ServerThread, draft_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    argv += ["--prompts", "general", "--num-sessions", "3", "--max-new-tokens", "2"]
    assert main([*argv, "--no-pipeline"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("[not pipelined: 3 sessions in batches of 3, 6 tokens, ")


def test_a_gamma_over_the_servers_draft_limit_is_refused_before_the_draft_loads(
    target: TransformersTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    running = start_server(target, max_draft_tokens=2)
    try:
        argv = ["drafting-server", "--server", f"127.0.0.1:{running.port}", "--draft", "nowhere"]
        assert main([*argv, "--gamma", "3"]) == 2
    finally:
        running.stop(grace_s=0)
    assert capsys.readouterr().err.startswith(
        "edgespec drafting-server: config field 'gamma': 3 exceeds the server's max_draft_tokens 2"
    )


def test_a_planners_batches_run_in_its_order(
    verifier: RemoteVerifier, batched: BatchedDraftModel, target: TransformersTarget
) -> None:
    # The Zhu planner (a pure policy, fed by the shared input builder) picks the batches
    # and γ; the drafting server runs them in the plan's order, and a batch leaves the
    # schedule when its sessions are done.
    from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients
    from edgespec.policies.drafting_server.planner import PipelinePlanner
    from edgespec.runtime.edge.drafting_server import plan_sessions

    dims = ModelDims("tiny", 2, 32, 64)
    costs = PipelineCosts(
        dims, dims, StageCoefficients(1e-9, 1e-3), StageCoefficients(1e-10, 5e-3), 1e6, 0.5
    )
    prompts = [(3, 4, 5), (9,) * 7, (2, 8), (11, 12, 13, 14, 15)]
    budgets = [6, 3, 6, 2]
    plan = plan_sessions(PipelinePlanner(costs, max_spec_len=3), prompts, budgets)
    result = run_drafting_server(
        verifier, batched, prompts, batches=plan.batches, gamma=plan.spec_len,
        max_new_tokens=budgets, pipelined=True,
    )  # fmt: skip
    for k, prompt in enumerate(prompts):
        assert result.sessions[k].output_token_ids == tuple(
            target_greedy_decode(target, prompt, budgets[k])
        )
    assert result.schedule[0] == tuple(range(len(plan.batches)))
    assert all(step == tuple(sorted(step)) for step in result.schedule)
    assert len(result.schedule) == result.num_steps
    with pytest.raises(ConfigError, match="batch size or the batches, not both"):
        run_drafting_server(
            verifier, batched, prompts, batch_size=2, batches=plan.batches, gamma=2,
            max_new_tokens=3, pipelined=True,
        )  # fmt: skip
    with pytest.raises(ConfigError, match="each of the 4 prompts once"):
        run_drafting_server(
            verifier, batched, prompts, batches=((0, 1), (1, 2, 3)), gamma=2,
            max_new_tokens=3, pipelined=True,
        )  # fmt: skip
