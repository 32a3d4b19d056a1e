"""Traces captured with a stop predictor: draft passes per round, summary columns, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.learn.traces.capture import capture_one
from edgespec.learn.traces.records import (
    TraceRecord,
    TraceRound,
    read_trace,
    record_from_json,
    record_to_json,
)
from edgespec.learn.traces.replay import sent_acceptance, wasted_passes_per_round
from edgespec.learn.traces.settings import CaptureSettings, PairInfo
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from tests.learn.traces.test_command import pair  # noqa: F401
from tests.models.tiny import VOCAB, tiny_draft, tiny_target
from tests.policies.stop_helpers import confidence_stop, constant_stop
from tests.runtime.edge.test_stop_drafting import ScriptedStop

ROUNDS = (TraceRound(2, 2, 1.0, 2.0, 3), TraceRound(0, 0, 1.0, 2.0, 1), TraceRound(4, 1, 1.0, 2.0))


def _record(rounds: tuple[TraceRound, ...]) -> TraceRecord:
    return TraceRecord("r", 0.0, 3, 2, 0, "default", "toy", "d", "t", 4, (1, 0), rounds)


def test_round_passes_are_an_optional_fifth_element() -> None:
    data = record_to_json(_record(ROUNDS))
    assert data["rounds"] == [[2, 2, 1.0, 2.0, 3], [0, 0, 1.0, 2.0, 1], [4, 1, 1.0, 2.0]]
    assert record_from_json(data, "line 1") == _record(ROUNDS)
    old = record_to_json(_record((TraceRound(4, 1, 1.0, 2.0),)))
    assert old["rounds"] == [[4, 1, 1.0, 2.0]]  # without passes: the old four elements
    assert record_from_json(old, "line 1").rounds[0].passes == 4
    with pytest.raises(ConfigError, match=r"^line 1: rounds\[0\]: expected \[gamma, accepted"):
        record_from_json({**data, "rounds": [[4, 1, 1.0, 2.0, 5, 6]]}, "line 1")


def test_sent_acceptance_and_wasted_passes() -> None:
    assert sent_acceptance(ROUNDS) == pytest.approx(3 / 6)
    # (3 − 2) + (1 − 0) + (4 − 1) passes that gave no accepted token, over 3 rounds
    assert wasted_passes_per_round(ROUNDS) == pytest.approx(5 / 3)
    assert sent_acceptance(()) is None and wasted_passes_per_round(()) is None


def test_capture_records_passes_and_keeps_the_per_position_data() -> None:
    target = TransformersTarget(tiny_target())
    drafter = TransformersDraft(tiny_draft(list(range(0, VOCAB, 2))))
    prompt = (5, 9, 7, 5, 11)
    info = PairInfo("t", "d")

    def run(settings: CaptureSettings) -> TraceRecord:
        return capture_one(target, drafter, info, prompt, "r", "toy", 0, 0.0, settings)

    plain = run(CaptureSettings(gamma_max=3, max_new_tokens=12, target_only=True))
    stop = ScriptedStop([True, False, False, True, True, True])
    stopped = run(CaptureSettings(gamma_max=3, max_new_tokens=12, target_only=True, stop=stop))
    assert stopped.lossless and plain.lossless
    assert stopped.acceptance_seq == plain.acceptance_seq  # computed on the target's prefix
    assert stopped.draft_features == plain.draft_features
    assert all(r.draft_passes is None for r in plain.rounds)
    assert [(r.gamma, r.draft_passes) for r in stopped.rounds[:3]] == [(1, 2), (0, 1), (3, 3)]
    assert stopped.rounds[-1].draft_passes is not None  # the last, undrafted round too
    dynamic = run(CaptureSettings(gamma_max=3, max_new_tokens=12, window="dynamic"))
    assert dynamic.acceptance_seq == plain.acceptance_seq
    with pytest.raises(ValueError, match="window must be one of static, dynamic"):
        CaptureSettings(window="wide")


def _trace_args(models: tuple[Path, Path], tmp_path: Path) -> list[str]:
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"w5 w{9 + i} w7 w5"}) + "\n" for i in (0, 1)))
    target, draft = models
    args = ["trace", "--target", str(target), "--draft", str(draft), "--dataset", str(prompts)]
    return [*args, "--max-new-tokens", "8", "--baselines", "--threads", "1"]


def test_trace_command_with_a_stop_predictor(
    pair: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    predictor = tmp_path / "stop.json"
    predictor.write_text(json.dumps(confidence_stop(0.5).to_json()))
    args = [*_trace_args(pair, tmp_path), "--out", str(tmp_path / "t.jsonl")]
    assert main([*args, "--stop-predictor", str(predictor), "--window", "dynamic"]) == 0
    records = read_trace(tmp_path / "t.jsonl")
    assert all(r.lossless and r.output_tokens == 8 and r.draft_features for r in records)
    assert all(rnd.draft_passes is not None for r in records for rnd in r.rounds)
    err = capsys.readouterr().err
    assert "γ = 4, dynamic window, stop predictor" in err
    assert "sent acc." in err and "wasted /" in err
    predictor.write_text(json.dumps(constant_stop(False).to_json()))
    assert main([*args, "--stop-predictor", str(predictor), "--overwrite"]) == 0
    records = read_trace(tmp_path / "t.jsonl")
    assert all(rnd.gamma == 0 for r in records for rnd in r.rounds)  # every block empty
    assert all(r.lossless for r in records)


def test_trace_command_refuses_a_bad_predictor(
    pair: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [*_trace_args(pair, tmp_path), "--out", str(tmp_path / "t.jsonl")]
    missing = tmp_path / "nope.json"
    assert main([*args, "--stop-predictor", str(missing)]) == 2
    assert f"stop predictor file {missing} does not exist" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text(json.dumps(constant_stop(True).to_json()))
    # refused before any model loads (the default target is not loaded here)
    assert main([*args, "--stop-predictor", str(good), "--tree", "2,1"]) == 2
    assert "--stop-predictor needs a neural chain draft" in capsys.readouterr().err
    ngram = ["trace", "--draft", "ngram", "--stop-predictor", str(good), "--out", "x.jsonl"]
    assert main(ngram) == 2
    assert "--stop-predictor needs a neural chain draft" in capsys.readouterr().err
