"""Stop-at-first-predicted-rejection drafting in the simulator, timed by hand.

Costs as in tests/sim/helpers.hand_trace_scenario: drafter 10 ms per forwarded token (the
first round forwards the prompt, then one token per further pass); server 5 ms + 1 ms per
new token + 0.1 ms per cached token; one-way 10 ms + bytes·1e-6 s. The predictor keeps a
position when its confidence (feature 0) is ≥ 0.5 and costs 2 ms per draft pass. γ = 4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.config import ConfigError
from edgespec.sim.model.acceptance import TraceAcceptance
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.model.stop_model import StopBlock, StopModel, StopPredictorConfig
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.policies.stop_helpers import confidence_stop
from tests.sim.helpers import Tolerance, hand_trace_scenario

EXACT: Tolerance = {"abs": 1e-12}


def confidence_policy_file(tmp_path: Path) -> str:
    path = tmp_path / "stop.json"
    path.write_text(json.dumps(confidence_stop(gain=20.0).to_json()))
    return str(path)


def features(confidences: list[float]) -> list[list[float]]:
    return [[c, 1.0, 0.5, 2.0, 0.9] for c in confidences]


def scenario(tmp_path: Path, rows: list[dict[str, Any]], **stop: Any) -> dict[str, Any]:
    data = hand_trace_scenario(tmp_path, rows, gamma=4)
    data["stop_predictor"] = {
        "policy": {"name": "mlp", "params": {"file": confidence_policy_file(tmp_path)}},
        "overhead_ms": 2.0,
        **stop,
    }
    return data


def test_every_timestamp_with_a_stop_predictor(tmp_path: Path) -> None:
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
           "drafter_id": 0, "acceptance_seq": [1, 1, 1, 0, 1, 1],
           "draft_features": features([0.9, 0.9, 0.2, 0.9, 0.9, 0.9])}  # fmt: skip
    result = simulate(scenario_from_dict(scenario(tmp_path, [row])))
    assert result.path.startswith("inlined (inlined: static window, fcfs batching; ")
    assert result.path.endswith("; inbound refused: stop-cut blocks; round records)")
    # round 1 at 0: γ = 4; keeps positions 0, 1, stops at 2 (confidence 0.2): 2 sent,
    # 3 passes: (4 prompt + 2 more passes) · 10 ms + 3 · 2 ms = 0.066; uplink 88 B
    # 0.010088 → 0.076088; 6 new tokens: 0.011 → 0.087088; accepts 2 (of a run of 3),
    # commits 3; downlink 80 B 0.01008 → 0.097168.
    # round 2: γ = min(4, 6 − 3 − 1) = 2; keeps 3 and 4 (a false alarm at 3): 2 sent,
    # 2 passes: 0.02 + 0.004 → 0.121168; uplink 72 B → 0.13124; cached 6, new 3:
    # 0.0086 → 0.13984; accepts 0 (position 3 rejected), commits 1; downlink 72 B → 0.149912.
    # round 3: γ = 1; keeps 4: 1 pass 0.012 → 0.161912; uplink 68 B → 0.17198; cached 7,
    # new 2: 0.0077 → 0.17968; accepts 1, commits 2 (done); downlink 76 B → 0.189756.
    rounds: list[tuple[object, ...]] = [
        (r.round_index, r.start_s, r.end_s, r.draft_s, r.num_drafted, r.num_accepted,
         r.num_committed, r.num_draft_passes) for r in result.rounds
    ]  # fmt: skip
    assert rounds == [
        (0, 0.0, pytest.approx(0.097168, **EXACT), pytest.approx(0.066, **EXACT), 2, 2, 3, 3),
        (1, pytest.approx(0.097168, **EXACT), pytest.approx(0.149912, **EXACT),
         pytest.approx(0.024, **EXACT), 2, 0, 1, 2),
        (2, pytest.approx(0.149912, **EXACT), pytest.approx(0.189756, **EXACT),
         pytest.approx(0.012, **EXACT), 1, 1, 2, 1),
    ]  # fmt: skip
    batches: list[tuple[object, ...]] = [
        (b.start_s, b.end_s, b.num_new_tokens, b.num_cached_tokens) for b in result.batches
    ]
    assert batches == [
        (pytest.approx(0.076088, **EXACT), pytest.approx(0.087088, **EXACT), 6, 0),
        (pytest.approx(0.13124, **EXACT), pytest.approx(0.13984, **EXACT), 3, 6),
        (pytest.approx(0.17198, **EXACT), pytest.approx(0.17968, **EXACT), 2, 7),
    ]
    (request,) = result.requests
    assert (request.num_drafted, request.num_accepted, request.num_output_tokens) == (5, 3, 6)
    assert request.finish_s == pytest.approx(0.189756, **EXACT)
    assert request.draft_s == pytest.approx(0.066 + 0.024 + 0.012, **EXACT)


def test_a_stop_at_the_first_position_sends_an_empty_block(tmp_path: Path) -> None:
    row = {"request_id": "e", "arrival_ms": 0.0, "prompt_tokens": 2, "output_tokens": 3,
           "drafter_id": 0, "acceptance_seq": [1, 1, 1],
           "draft_features": features([0.1, 0.9, 0.9])}  # fmt: skip
    result = simulate(scenario_from_dict(scenario(tmp_path, [row])))
    first = result.rounds[0]
    # γ = 2; position 0 predicted rejected: nothing sent, 1 pass (the prefill):
    # 2 · 10 ms + 2 ms; uplink 72 B (the prompt ids); the server runs 2 new tokens.
    assert (first.num_drafted, first.num_draft_passes, first.num_accepted) == (0, 1, 0)
    assert first.draft_s == pytest.approx(0.022, **EXACT)
    assert result.batches[0].start_s == pytest.approx(0.032072, **EXACT)
    assert result.batches[0].num_new_tokens == 2
    assert result.requests[0].num_output_tokens == 3


def test_confusion_stand_in_without_features(tmp_path: Path) -> None:
    row = {"request_id": "c", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 40,
           "drafter_id": 0, "acceptance_seq": [1] * 40}  # fmt: skip
    never = scenario(tmp_path, [row], confusion_tpr=1.0, confusion_fpr=0.0)
    never["stop_predictor"].pop("policy")
    rounds = simulate(scenario_from_dict(never)).rounds
    # every token accepted and kept with TPR 1: full windows, no extra pass
    assert all(r.num_draft_passes == r.num_drafted for r in rounds)
    assert [r.num_drafted for r in rounds[:3]] == [4, 4, 4]
    cut = scenario(tmp_path, [row], confusion_tpr=0.0, confusion_fpr=0.0)
    cut["stop_predictor"].pop("policy")
    never["duration_s"] = cut["duration_s"] = 10.0  # both requests finish
    rounds = simulate(scenario_from_dict(cut)).rounds
    # TPR 0: every block stops at its first position; the last token is a plain target
    # step with nothing drafted (0 passes) and nothing accepted
    assert all((r.num_drafted, r.num_draft_passes) == (0, 1) for r in rounds[:-1])
    assert len(rounds) == 40
    assert (rounds[-1].num_draft_passes, rounds[-1].num_accepted) == (0, 0)


def test_missing_features_without_stand_in_is_an_error(tmp_path: Path) -> None:
    row = {"request_id": "x", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
           "drafter_id": 0, "acceptance_seq": [1, 1, 1, 0, 1, 1]}  # fmt: skip
    with pytest.raises(ConfigError) as info:
        simulate(scenario_from_dict(scenario(tmp_path, [row])))
    assert str(info.value) == (
        "config field 'stop_predictor': policy 'mlp' replays each request's draft_features, "
        f"and workload.trace {tmp_path / 'trace.jsonl'}:1: request 'x' has none; give "
        "confusion_tpr and "
        "confusion_fpr (the stand-in for requests without them) or replay traces that have "
        "draft_features (acceptance.kind: trace, or a trace workload; edgespec trace records "
        "them for a neural --draft, not for --draft ngram)"
    )


def test_config_errors_name_the_field(tmp_path: Path) -> None:
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
           "drafter_id": 0, "acceptance_seq": [1] * 6}  # fmt: skip
    data = scenario(tmp_path, [row], confusion_tpr=0.8)
    with pytest.raises(ConfigError, match="both confusion_tpr and confusion_fpr"):
        scenario_from_dict(data)
    data = scenario(tmp_path, [row], confusion_tpr=1.5, confusion_fpr=0.1)
    with pytest.raises(ConfigError, match="stop_predictor.confusion_tpr"):
        scenario_from_dict(data)
    data = scenario(tmp_path, [row])
    data["stop_predictor"]["policy"] = {"name": "oracle"}
    with pytest.raises(ConfigError, match="unknown stop policy 'oracle'"):
        simulate(scenario_from_dict(data))


def test_features_without_a_policy_use_the_confusion_stand_in(tmp_path: Path) -> None:
    row = {"request_id": "f", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 9,
           "drafter_id": 0, "acceptance_seq": [1] * 9,
           "draft_features": features([0.1] * 9)}  # fmt: skip
    data = scenario(tmp_path, [row], confusion_tpr=1.0, confusion_fpr=0.0)
    data["stop_predictor"].pop("policy")
    rounds = simulate(scenario_from_dict(data)).rounds
    # no policy to replay the features (which would stop at once): every accepted token
    # kept (TPR 1), full windows: γ 4, then min(4, 9 − 5 − 1) = 3
    assert [(r.num_drafted, r.num_draft_passes) for r in rounds] == [(4, 4), (3, 3)]


@pytest.mark.parametrize(
    ("tpr", "fpr", "seq", "block"),
    [
        (1.0, 0.0, (1, 1, 0, 1), StopBlock(2, 3, 2)),  # kept to the first rejection, cut there
        (0.0, 1.0, (1, 1, 0, 1), StopBlock(0, 1, 0)),  # a missed acceptance cuts at once
        (0.0, 1.0, (0, 1, 1, 1), StopBlock(4, 4, 0)),  # false alarms: a full block, 0 accepted
    ],
)
def test_confusion_stand_in_keeps_by_the_true_outcome(
    tpr: float, fpr: float, seq: tuple[int, ...], block: StopBlock
) -> None:
    model = StopModel(StopPredictorConfig(confusion_tpr=tpr, confusion_fpr=fpr), None, ())
    rng = UniformStream(np.random.default_rng(0), block=8)
    assert model.block("r", seq, 0, 4, TraceAcceptance(), rng) == block


@pytest.mark.parametrize(
    ("stop", "field", "message"),
    [
        ({"confusion_fpr": 0.1}, "stop_predictor", "give both confusion_tpr and confusion_fpr"),
        (
            {"policy": None},
            "stop_predictor",
            "needs a policy or confusion_tpr/confusion_fpr",
        ),
        (
            {"confusion_tpr": -0.1, "confusion_fpr": 0.1},
            "stop_predictor.confusion_tpr",
            "must be in [0, 1], got -0.1",
        ),
        ({"overhead_ms": -1.0}, "stop_predictor.overhead_ms", "must be >= 0, got -1.0"),
        ({"overhead_ms": float("inf")}, "stop_predictor.overhead_ms", "must be >= 0, got inf"),
    ],
)
def test_stop_config_errors_name_the_field(
    tmp_path: Path, stop: dict[str, Any], field: str, message: str
) -> None:
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
           "drafter_id": 0, "acceptance_seq": [1] * 6}  # fmt: skip
    data = scenario(tmp_path, [row], **stop)
    if data["stop_predictor"]["policy"] is None:
        del data["stop_predictor"]["policy"]
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(data)
    assert str(info.value) == f"config field '{field}': {message}"
