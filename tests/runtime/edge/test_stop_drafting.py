"""A stop predictor in the real drafter: per-token stops, pass accounting, lossless output."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

torch = pytest.importorskip("torch")

from edgespec.cli import main  # noqa: E402
from edgespec.core.features import stop_features  # noqa: E402
from edgespec.core.types import SamplingParams  # noqa: E402
from edgespec.runtime.backends.base import DraftBackend, stopping_drafter  # noqa: E402
from edgespec.runtime.backends.hybrid_draft import HybridDraft  # noqa: E402
from edgespec.runtime.backends.ngram import NgramDrafter  # noqa: E402
from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.backends.transformers_draft import TransformersDraft  # noqa: E402
from edgespec.runtime.backends.tree_draft import TreeDraft  # noqa: E402
from edgespec.runtime.edge.drafter import DraftOptions, generate  # noqa: E402
from edgespec.runtime.wire.grpc_client import RemoteVerifier  # noqa: E402
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode  # noqa: E402
from tests.models.tiny import tiny_draft  # noqa: E402
from tests.policies.stop_helpers import confidence_stop, constant_stop  # noqa: E402
from tests.runtime.conftest import ServerFactory  # noqa: E402

RNG = np.random.default_rng(0)
PROMPTS = [(5, 6, 7, 8, 9), (3, 1, 4, 1, 5, 9, 2, 6), (11, 12, 11, 12, 11, 40, 41, 11, 12)]
MAX_NEW = 16


class ScriptedStop:
    """Answers the n-th question with ``answers[n]`` (then keeps), recording every row."""

    def __init__(self, answers: Iterable[bool]) -> None:
        self.answers = list(answers)
        self.seen: list[npt.NDArray[np.float64]] = []

    def keep_mask(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        keep = [
            self.answers[len(self.seen) + i] if len(self.seen) + i < len(self.answers) else True
            for i in range(len(features))
        ]
        self.seen.extend(np.asarray(features, dtype=np.float64))
        return np.asarray(keep, dtype=np.bool_)


@pytest.mark.parametrize("kind", ["plain", "hybrid", "trimmed"])
@pytest.mark.parametrize("kept", [0, 1, 2, 3, 4])
def test_the_block_ends_before_the_first_rejection(draft_model: Any, kind: str, kept: int) -> None:
    model = tiny_draft(kept=range(3, 40)) if kind == "trimmed" else draft_model
    make = HybridDraft if kind == "hybrid" else TransformersDraft
    context = list(PROMPTS[2])
    plain = make(model).propose(context, 4, 0.0, RNG)
    assert plain.num_passes is None  # no stop policy: the proposal is as before
    drafter = make(model)
    full_logits = make(model)
    full_logits.propose(context, 4, 0.0, RNG)
    stop = ScriptedStop([True] * kept + [False])
    got = drafter.propose_until_stop(context, 4, 0.0, RNG, stop)
    passes = kept + 1 if kept < 4 else 4
    assert got.token_ids == plain.token_ids[:kept]  # the stopped-on token is not sent
    assert got.num_passes == passes
    assert len(stop.seen) == passes  # asked once per pass, lookup positions included
    assert full_logits.last_logits is not None and drafter.last_logits is not None
    np.testing.assert_array_equal(drafter.last_logits, full_logits.last_logits[:passes])
    # the predictor saw the rounded trace features of each pass's logit row (K wide when
    # the draft is trimmed)
    np.testing.assert_array_equal(np.stack(stop.seen), stop_features(drafter.last_logits))
    again = drafter.propose(context, 4, 0.0, RNG)  # the cache is still in step
    assert again.token_ids == plain.token_ids


def test_hybrid_asks_the_predictor_at_lookup_positions(draft_model: Any) -> None:
    context = [11, 12, 11, 12, 11, 40, 41, 11, 12]  # lookup proposes 11 after "11 12"
    assert HybridDraft(draft_model).propose(context, 1, 0.0, RNG).token_ids == (11,)
    stop = ScriptedStop([False])
    got = HybridDraft(draft_model).propose_until_stop(context, 3, 0.0, RNG, stop)
    assert got.token_ids == () and got.num_passes == 1 and len(stop.seen) == 1


def test_sampled_blocks_keep_q_for_the_sent_tokens_only(draft_model: Any) -> None:
    drafter = TransformersDraft(draft_model)
    got = drafter.propose_until_stop([1, 2, 3], 4, 0.8, RNG, ScriptedStop([True, True, False]))
    assert len(got.token_ids) == 2 and got.num_passes == 3
    assert got.probs is not None and got.probs.shape == (2, 64)
    empty = drafter.propose_until_stop([1, 2, 3], 4, 0.8, RNG, ScriptedStop([False]))
    assert empty.token_ids == () and empty.probs is None and empty.num_passes == 1


def test_drafters_that_cannot_stop_are_named(draft_model: Any, target: TransformersTarget) -> None:
    drafters: list[tuple[DraftBackend, str]] = [
        (NgramDrafter(), "NgramDrafter"),
        (TreeDraft(draft_model, (2, 1)), "TreeDraft"),
    ]
    for drafter, name in drafters:
        with pytest.raises(ValueError, match=f"^{name} cannot draft with a stop predictor"):
            stopping_drafter(drafter)
        with pytest.raises(ValueError, match=f"^{name} cannot draft with a stop predictor"):
            speculative_generate(target, drafter, PROMPTS[0], 4, stop=constant_stop(True))
    with pytest.raises(ValueError, match="TreeDraft cannot draft"):
        TreeDraft(draft_model, (2, 1)).propose_until_stop([1, 2], 2, 0.0, RNG, ScriptedStop([]))


def test_round_records_count_the_stopped_on_pass(
    draft_model: Any, target: TransformersTarget
) -> None:
    # round 1 keeps 1 then stops; round 2 stops at once (an empty block mid-generation);
    # round 3 keeps all 3 (K_max reached: no further question); then always keep
    stop = ScriptedStop([True, False, False, True, True, True])
    sampling = SamplingParams(max_new_tokens=MAX_NEW)
    result = speculative_generate(
        target, TransformersDraft(draft_model), PROMPTS[1], 3, sampling, stop=stop
    )
    rounds = result.rounds
    assert [r.num_drafted for r in rounds[:3]] == [1, 0, 3]
    assert [r.num_draft_passes for r in rounds[:3]] == [2, 1, 3]
    assert [r.draft_passes for r in rounds[:3]] == [2, 1, 3]
    assert rounds[1].num_accepted == 0 and rounds[1].num_committed == 1
    assert result.output_token_ids == target_greedy_decode(target, PROMPTS[1], MAX_NEW)
    assert len(stop.seen) == sum(r.draft_passes for r in rounds)


@pytest.mark.parametrize("make", [TransformersDraft, HybridDraft])
def test_greedy_output_is_the_target_alone_whatever_the_predictor(
    draft_model: Any, target: TransformersTarget, make: type[TransformersDraft]
) -> None:
    policies = [
        confidence_stop(0.35),
        confidence_stop(0.5),
        confidence_stop(0.7),
        confidence_stop(0.5, threshold=0.99),
        constant_stop(False),
        constant_stop(True),
    ]
    sampling = SamplingParams(max_new_tokens=MAX_NEW)
    stopped = sent = 0
    for prompt in PROMPTS:
        reference = target_greedy_decode(target, prompt, MAX_NEW)
        for policy in policies:
            result = speculative_generate(
                target, make(draft_model), prompt, 4, sampling, stop=policy
            )
            assert result.output_token_ids == reference
            for r in result.rounds:
                assert r.num_drafted <= r.draft_passes <= r.num_drafted + 1
                stopped += r.draft_passes - r.num_drafted
                sent += r.num_drafted
            if policy is policies[4]:  # stops at position 1: every block is empty
                assert all(r.num_drafted == 0 for r in result.rounds)
                assert [r.draft_passes for r in result.rounds[:-1]] == [1] * (MAX_NEW - 1)
            if policy is policies[5]:  # never stops: the static window's blocks
                assert all(r.num_draft_passes == r.num_drafted for r in result.rounds)
    assert stopped > 0 and sent > 0


def test_sampled_generation_with_empty_blocks_runs(
    draft_model: Any, target: TransformersTarget
) -> None:
    sampling = SamplingParams(temperature=0.8, max_new_tokens=MAX_NEW, seed=3)
    for policy in (confidence_stop(0.5), constant_stop(False)):
        result = speculative_generate(
            target, TransformersDraft(draft_model), PROMPTS[0], 4, sampling, stop=policy
        )
        assert len(result.output_token_ids) == MAX_NEW


def test_loopback_grpc_with_a_stop_predictor_is_lossless(
    make_server: ServerFactory, draft_model: Any, target: TransformersTarget
) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    sampling = SamplingParams(max_new_tokens=MAX_NEW)
    for i, policy in enumerate((confidence_stop(0.5), constant_stop(False))):
        result = generate(
            verifier,
            TransformersDraft(draft_model),
            PROMPTS[1],
            sampling,
            DraftOptions(session_id=f"stop-{i}"),
            stop=policy,
        )
        assert result.output_token_ids == target_greedy_decode(target, PROMPTS[1], MAX_NEW)
        assert any(r.num_draft_passes != r.num_drafted for r in result.rounds)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory, draft_model: Any) -> Path:
    path = tmp_path_factory.mktemp("draft")
    draft_model.save_pretrained(path)
    return path


def test_draft_command_with_a_stop_predictor(
    make_server: ServerFactory,
    model_dir: Path,
    target: TransformersTarget,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = make_server()
    predictor = tmp_path / "stop.json"
    predictor.write_text(json.dumps(confidence_stop(0.9, threshold=0.3).to_json()))
    records = tmp_path / "rounds.jsonl"
    args = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", str(model_dir)]
    args += ["--prompt-ids", ",".join(map(str, PROMPTS[0])), "--max-new-tokens", str(MAX_NEW)]
    args += ["--stop-predictor", str(predictor), "--records", str(records)]
    for threshold in ("0.0", "0.5", "1.0"):
        assert main([*args, "--stop-threshold", threshold]) == 0
        out = capsys.readouterr()
        streamed = [int(t) for t in out.out.translate(str.maketrans("[],", "   ")).split()]
        assert tuple(streamed) == target_greedy_decode(target, PROMPTS[0], MAX_NEW)
        rows = [json.loads(line) for line in records.read_text().splitlines()]
        rounds = [r for r in rows if r["type"] == "RoundRecord"]
        passes = [r["num_draft_passes"] for r in rounds]
        drafted = [r["num_drafted"] for r in rounds]
        if threshold == "0.0":  # keeps everything: full blocks
            assert passes[:-1] == drafted[:-1] == [4] * (len(rounds) - 1)
        if threshold == "1.0":  # P < 1 everywhere: every block is empty
            assert drafted == [0] * len(rounds) and passes[:-1] == [1] * (len(rounds) - 1)
        assert f"{sum(drafted)} sent of {sum(passes)} drafted" in out.err


def test_draft_command_refuses_a_bad_predictor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram", "--prompt-ids", "5,6"]
    missing = tmp_path / "nope.json"
    assert main([*base, "--stop-predictor", str(missing)]) == 2
    assert f"stop predictor file {missing} does not exist" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main([*base, "--stop-predictor", str(broken)]) == 2
    assert f"{broken}: not JSON" in capsys.readouterr().err
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"kind": "tree"}))
    assert main([*base, "--stop-predictor", str(wrong)]) == 2
    assert f"{wrong}: not an MLP stop predictor" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text(json.dumps(constant_stop(True).to_json()))
    assert main([*base, "--stop-predictor", str(good), "--stop-threshold", "1.5"]) == 2
    assert "threshold must be in [0, 1]" in capsys.readouterr().err
    assert main([*base, "--stop-threshold", "0.5"]) == 2
    assert "--stop-threshold needs --stop-predictor" in capsys.readouterr().err
    assert main([*base, "--stop-predictor", str(good), "--mode", "centralized"]) == 2
    assert "needs --mode distributed" in capsys.readouterr().err
