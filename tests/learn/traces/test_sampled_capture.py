"""Sampled traces (``edgespec trace --temperature``) on tiny models: α per position where
the draft's distribution is known in closed form, the flags the rounds drew replaying them
at the captured window, and the draws agreeing with α."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.core.types import SamplingParams
from edgespec.learn.traces.acceptance import acceptance_probabilities, sampled_flags
from edgespec.learn.traces.capture import capture
from edgespec.learn.traces.records import TraceRecord, read_trace
from edgespec.learn.traces.replay import replay_accepted_lengths
from edgespec.learn.traces.settings import CaptureSettings, PairInfo
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.hybrid_draft import HybridDraft
from edgespec.runtime.backends.ngram import NgramDrafter, suffix_match_next
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.sampling import logits_to_probs
from tests.learn.traces.test_command import pair  # noqa: F401
from tests.models.tiny import VOCAB, tiny_draft, tiny_target


class Draws:
    """A stand-in for ``np.random.Generator`` whose ``random()`` returns set numbers."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def test_sampled_flags_keep_what_rounds_tested_and_draw_what_none_did() -> None:
    alphas = (0.5, 0.5, 0.5, 0.9, 0.5, 0.5, 0.5, 0.2, 0.3, 0.5)
    # round 1 sent 4, accepted 2 (positions 0, 1; 2 rejected); round 2 sent 4 and accepted
    # all (3..6; 7 untested: drawn 0.1 < 0.2); round 3 sent 0 (8 untested: drawn 0.4 >= 0.3);
    # position 9 after every round: drawn 0.45 < 0.5
    rng = Draws(0.1, 0.4, 0.45)
    flags = sampled_flags([(4, 2), (4, 4), (0, 0)], alphas, rng)  # type: ignore[arg-type]
    assert flags == (1, 1, 0, 1, 1, 1, 1, 1, 0, 1)
    assert rng.values == []
    # the rounds run past the output (it ended at an end of sequence): cut to the output
    assert sampled_flags([(4, 4)], (0.5, 0.5), Draws()) == (1, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("top_k", [0, 3])
def test_a_lookup_drafts_alpha_is_the_targets_probability_of_its_token(top_k: int) -> None:
    target = TransformersTarget(tiny_target())
    lookup = NgramDrafter(max_ngram=2, vocab_size=target.vocab_size)
    prompt, output = (2, 5, 6, 7, 5, 6), (7, 5, 9, 7)
    sampling = SamplingParams(temperature=0.7, top_k=top_k)
    sampled = acceptance_probabilities(lookup, target, prompt, output, sampling)
    alphas = sampled.alphas
    assert sampled.row_entries == (1, 1, 1, 1)  # a compact row of one certain token
    # lookup proposes 7, 5, 6, 9 for certain (test_capture's hits and misses); the target's
    # row cut to its 3 likeliest tokens gives the others no chance
    proposed = (7, 5, 6, 9)
    for j, token in enumerate(proposed):
        context = (*prompt, *output[:j])
        row = target.forward([ForwardItem(None, 0, context, 1)])[0].logits
        expected = logits_to_probs(row, 0.7, top_k=top_k)[0][token]
        assert alphas[j] == pytest.approx(expected, rel=1e-9)
    if top_k:
        assert 0.0 in alphas


def test_a_hybrid_drafts_alpha_is_the_lookups_where_it_looks_up_and_the_models_elsewhere() -> None:
    """The trimmed draft with prompt lookup first, sampling: a looked-up token is proposed
    for certain (α the target's probability of it, a row of one entry), any other drawn
    from the draft's own distribution (α and entries those of the draft alone)."""
    target = TransformersTarget(tiny_target())
    model = tiny_draft(list(range(1, VOCAB, 2)))
    prompt, output = (2, 5, 6, 7, 5, 6), (7, 5, 9, 7)
    sampling = SamplingParams(temperature=0.7)
    hybrid = acceptance_probabilities(HybridDraft(model), target, prompt, output, sampling)
    alone = acceptance_probabilities(TransformersDraft(model), target, prompt, output, sampling)
    looked_up = [suffix_match_next((*prompt, *output[:j]), 8, 2) for j in range(len(output))]
    assert looked_up == [7, 5, 6, None]  # (5, 6) → 7, (6, 7) → 5, (7, 5) → 6; (5, 9) unseen
    for j, token in enumerate(looked_up[:3]):
        row = target.forward([ForwardItem(None, 0, (*prompt, *output[:j]), 1)])[0].logits
        assert hybrid.alphas[j] == pytest.approx(logits_to_probs(row, 0.7)[0][token], rel=1e-9)
    assert hybrid.row_entries[:3] == (1, 1, 1)
    assert hybrid.alphas[3] == pytest.approx(alone.alphas[3], rel=1e-6)
    assert hybrid.row_entries[3] == alone.row_entries[3] > 1


def test_the_target_rows_in_passes_are_those_of_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgespec.learn.traces import acceptance

    target = TransformersTarget(tiny_target())
    draft = TransformersDraft(tiny_draft(list(range(1, VOCAB, 2))))
    prompt, output = (2, 17, 4, 9), (33, 4, 9, 12, 40, 7, 7, 30)
    sampling = SamplingParams(temperature=0.9)
    whole = acceptance_probabilities(draft, target, prompt, output, sampling)
    monkeypatch.setattr(acceptance, "ROWS_PER_PASS", 3)  # passes of 3, 3 and 2 rows
    parts = acceptance_probabilities(draft, target, prompt, output, sampling)
    assert parts.alphas == pytest.approx(whole.alphas, rel=1e-5)
    assert parts.row_entries == whole.row_entries


def test_a_draft_that_is_the_target_is_accepted_almost_surely() -> None:
    model = tiny_target()
    target, draft = TransformersTarget(model), TransformersDraft(model)
    sampling = SamplingParams(temperature=0.9)
    alphas = acceptance_probabilities(
        draft, target, (2, 17, 4, 9), (33, 4, 9, 12, 40), sampling
    ).alphas
    # the draft keeps its likeliest tokens up to 0.999 of its mass (runtime.sampling)
    assert len(alphas) == 5 and all(0.998 <= a <= 1.0 for a in alphas)


def test_a_draft_rows_entries_are_those_its_cuts_keep() -> None:
    """The draft drafts over the odd half of the vocabulary: uncut, a row keeps many of
    those tokens; cut to the 3 likeliest, 3; a nucleus keeps fewer the more peaked the
    row, at most what the uncut row keeps."""
    target = TransformersTarget(tiny_target())
    draft = TransformersDraft(tiny_draft(list(range(1, VOCAB, 2))))
    prompt, output = (2, 17, 4, 9), (33, 4, 9, 12, 40, 7, 7, 30)

    def entries(**cuts: float) -> tuple[int, ...]:
        sampling = SamplingParams(temperature=0.9, **cuts)  # type: ignore[arg-type]
        return acceptance_probabilities(draft, target, prompt, output, sampling).row_entries

    uncut, top3, nucleus = entries(), entries(top_k=3), entries(top_p=0.5)
    assert len(uncut) == len(output) and all(3 < n <= VOCAB // 2 for n in uncut)
    assert top3 == (3,) * len(output)
    assert all(1 <= n <= u for n, u in zip(nucleus, uncut, strict=True))
    assert sum(nucleus) < sum(uncut)


PROMPTS = [(f"p{i}", "toy", (2, 5 + i, 17, 4 + i, 9, 33, 4)) for i in range(6)]


def _measured_within_output(num_output: int, rounds: list[tuple[int, int]]) -> list[int]:
    """Each round's accepted tokens cut at the output's end (a sampled end of sequence may
    end it partway through a round), the last rounds that start past it left out."""
    lengths, start = [], 0
    for _, accepted in rounds:
        if start >= num_output:
            break
        lengths.append(min(accepted, num_output - start))
        start += accepted + 1
    return lengths


def test_a_sampled_capture_replays_its_rounds_and_draws_as_often_as_alpha_says() -> None:
    target = TransformersTarget(tiny_target())
    drafter = TransformersDraft(tiny_draft(list(range(1, VOCAB, 2))))  # half the vocabulary
    settings = CaptureSettings(gamma_max=4, max_new_tokens=24, temperature=0.7, seed=3)
    records = capture(target, drafter, PairInfo("t", "d"), PROMPTS, settings)
    flags: list[int] = []
    alphas: list[float] = []
    for record in records:
        assert record.temperature == 0.7 and record.acceptance_prob is not None
        assert record.lossless is None  # no baseline ran
        rounds = [(r.gamma, r.num_accepted) for r in record.rounds]
        replayed = replay_accepted_lengths(record.acceptance_seq, 4, 24)
        assert replayed == _measured_within_output(record.output_tokens, rounds)
        # the stop predictor's rows after a rejection: at the drawn rejections
        rejected = [p for p, f in enumerate(record.acceptance_seq[:-1]) if not f]
        assert [p for p, _ in record.rejection_features or ()] == rejected
        flags += record.acceptance_seq
        alphas += record.acceptance_prob
    # each flag is a draw with its position's α (tested by the round or drawn): their sums
    # agree within 4 standard deviations (seeded: the same numbers every run)
    spread = float(np.sqrt(sum(a * (1 - a) for a in alphas)))
    assert 0.2 < np.mean(alphas) < 0.8 and spread > 3
    assert abs(sum(flags) - sum(alphas)) <= 4 * spread
    again = capture(target, drafter, PairInfo("t", "d"), PROMPTS[:2], settings)
    assert [_drawn(r) for r in again] == [_drawn(r) for r in records[:2]]  # the same seed


def _drawn(record: TraceRecord) -> tuple[Any, ...]:
    """What a capture drew (its times aside)."""
    rounds = tuple((r.gamma, r.num_accepted) for r in record.rounds)
    return record.output_tokens, record.acceptance_seq, record.acceptance_prob, rounds


def test_the_command_samples_and_reports_the_expected_acceptance(
    pair: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text(
        "".join(json.dumps({"prompt": f"w5 w{9 + i} w7 w5"}) + "\n" for i in range(2))
    )
    target, draft = pair
    args = ["trace", "--target", str(target), "--draft", str(draft), "--dataset", str(prompts)]
    args += ["--max-new-tokens", "8", "--baselines", "--threads", "1", "--temperature", "0.8"]
    args += ["--top-k", "20"]
    out = [*args, "--out", str(tmp_path / "t.jsonl"), "--json", str(tmp_path / "s.json")]
    assert main(out) == 0
    records = read_trace(tmp_path / "t.jsonl")
    assert [(r.temperature, r.top_k) for r in records] == [(0.8, 20), (0.8, 20)]
    for r in records:  # the compact rows' sizes, within the cut, one per output token
        assert r.draft_row_entries is not None and len(r.draft_row_entries) == r.output_tokens
        assert min(r.draft_row_entries) >= 1 and max(r.draft_row_entries) <= 20
    assert all(r.lossless is None and r.target_only_ms and r.assisted_ms for r in records)
    summary = json.loads((tmp_path / "s.json").read_text())
    title = "speculative decoding, sampled at T = 0.8, top-k 20, γ = 4, static window"
    assert summary["title"] == title
    alphas = [a for r in records for a in r.acceptance_prob or ()]
    [row] = summary["summary"]
    assert row["expected_acceptance"] == pytest.approx(sum(alphas) / len(alphas), abs=1e-4)
    entries = [n for r in records for n in r.draft_row_entries or ()]
    assert row["mean_row_entries"] == pytest.approx(sum(entries) / len(entries))
    assert f" {row['expected_acceptance']:.3f} " in capsys.readouterr().err  # the table's


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--temperature", "-1"], "--temperature must be finite and >= 0, got -1.0"),
        (["--temperature", "nan"], "--temperature must be finite and >= 0, got nan"),
        (["--temperature", "0.8", "--top-p", "1.5"], "--top-p must be in (0, 1], got 1.5"),
        (
            ["--top-k", "40", "--min-p", "0.1"],
            "--top-k, --min-p: a cut of a sampled row; give --temperature > 0",
        ),
    ],
)
def test_a_temperature_it_cannot_sample_at_is_refused_before_any_model_loads(
    flags: list[str], problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["trace", "--target", "never-loaded", "--draft", "never-loaded", *flags]
    assert main([*args, "--out", str(tmp_path / "t.jsonl")]) == 2
    assert capsys.readouterr().err == f"edgespec trace: {problem}\n"


def test_a_feature_draft_samples_and_replays_its_rounds_too() -> None:
    """A draft that drafts from the target's returned features (its α asked on the
    target's features of the output's prefix)."""
    from edgespec.runtime.backends.feature_draft import FeatureDraft
    from tests.models.test_feature_draft import _net

    target = TransformersTarget(tiny_target())
    settings = CaptureSettings(gamma_max=4, max_new_tokens=12, temperature=0.8)
    records = capture(target, FeatureDraft(_net()), PairInfo("t", "f"), PROMPTS[:2], settings)
    for record in records:
        assert record.acceptance_prob is not None
        assert all(0.0 < a < 1.0 for a in record.acceptance_prob)
        rounds = [(r.gamma, r.num_accepted) for r in record.rounds]
        replayed = replay_accepted_lengths(record.acceptance_seq, 4, 12)
        assert replayed == _measured_within_output(record.output_tokens, rounds)


def test_a_stop_predictors_cut_rounds_leave_their_next_position_to_its_alpha() -> None:
    """A block a stop predictor ended sends fewer tokens than γ; accepted whole, the token
    it stopped on was never tested: a draw from its α (here every block is cut at once)."""
    from tests.policies.stop_helpers import constant_stop

    target = TransformersTarget(tiny_target())
    drafter = TransformersDraft(tiny_draft(list(range(1, VOCAB, 2))))
    settings = CaptureSettings(gamma_max=4, max_new_tokens=12, temperature=0.8,
                               stop=constant_stop(keep=False))  # fmt: skip
    records = capture(target, drafter, PairInfo("t", "d"), PROMPTS[:2], settings)
    for index, record in enumerate(records):
        assert all(r.gamma == 0 and r.draft_passes == 1 for r in record.rounds)  # all cut
        assert len(record.rounds) == record.output_tokens  # a token a round, none tested
        rounds = [(r.gamma, r.num_accepted) for r in record.rounds]
        assert record.acceptance_prob is not None
        rng = np.random.default_rng((settings.seed + index, 1))  # the prompt's own stream
        assert record.acceptance_seq == sampled_flags(rounds, record.acceptance_prob, rng)
