"""``acceptance.sampled_draws``: a sampled trace (one with ``acceptance_prob``) replays what
its rounds drew (``captured``, the default, the same at every seed) or, ``redrawn``, each
position accepted with its own α, drawn afresh from the run's seed
(edgespec.sim.setup.sources.redrawn); a greedy capture replays as captured either way."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.config import ConfigError
from edgespec.sim.model.acceptance import TraceAcceptance
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.setup.sources import load_acceptance, load_workload_trace
from edgespec.sim.shards import simulate_sharded
from edgespec.sim.simulator import run_scenario, simulate
from edgespec.sweeps.executor import SerialExecutor
from tests.sim.helpers import hand_trace_scenario, tiny_scenario
from tests.sim.test_shards import pinned

NUM_OUTPUT = 200


def _rows(num: int, seed: int, sampled: bool = True) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(num):
        alphas = [round(float(a), 4) for a in rng.uniform(0.05, 0.95, NUM_OUTPUT)]
        drawn = [int(u < a) for u, a in zip(rng.random(NUM_OUTPUT), alphas, strict=True)]
        row: dict[str, Any] = {
            "request_id": f"r{i}", "arrival_ms": 5.0 * i, "prompt_tokens": 4,
            "output_tokens": NUM_OUTPUT, "drafter_id": i % 2,
            "acceptance_seq": drawn,
        }  # fmt: skip
        if sampled:
            row.update(temperature=0.8, acceptance_prob=alphas)
        rows.append(row)
    return rows


def _workload(tmp_path: Path, rows: list[dict[str, Any]], *overrides: str) -> list[Any]:
    data = hand_trace_scenario(tmp_path, rows, gamma=4, duration_s=60.0)
    scenario = scenario_from_dict(data, ["temperature=0.8", *overrides])
    return [e.acceptance_seq for e in load_workload_trace(scenario)]


def test_captured_replays_the_trace_and_redrawn_draws_each_position_from_its_alpha(
    tmp_path: Path,
) -> None:
    rows = _rows(10, seed=3)
    captured = [tuple(r["acceptance_seq"]) for r in rows]
    assert _workload(tmp_path, rows, "seed=1") == _workload(tmp_path, rows, "seed=2") == captured
    redraw = "acceptance.sampled_draws=redrawn"
    first = _workload(tmp_path, rows, "seed=1", redraw)
    assert first == _workload(tmp_path, rows, "seed=1", redraw)  # seeded: the same again
    other = _workload(tmp_path, rows, "seed=2", redraw)
    assert first != captured and other != first
    # each position accepted with its α: 2,000 positions, the count within 4 sigma
    alphas = np.array([r["acceptance_prob"] for r in rows])
    for drawn in (first, other):
        accepted = np.array(drawn).sum()
        sigma = np.sqrt((alphas * (1 - alphas)).sum())
        assert abs(accepted - alphas.sum()) < 4 * sigma, (accepted, alphas.sum())
    # and position by position: the likelier half accepted more often than the other
    likely = alphas > np.median(alphas)
    hits = np.array(first) + np.array(other)
    assert hits[likely].mean() > hits[~likely].mean() + 0.5


def test_a_greedy_capture_replays_as_captured_beside_a_redrawn_one(tmp_path: Path) -> None:
    rows = _rows(2, seed=4) + _rows(1, seed=5, sampled=False)
    rows[2].update(request_id="greedy", arrival_ms=100.0)  # last in arrival order too
    drawn = _workload(tmp_path, rows, "acceptance.sampled_draws=redrawn")
    assert drawn[2] == tuple(rows[2]["acceptance_seq"])
    assert drawn[:2] != [tuple(r["acceptance_seq"]) for r in rows[:2]]


def test_each_request_drawing_from_the_pool_gets_its_own_redraw(tmp_path: Path) -> None:
    trace = tmp_path / "sampled.jsonl"
    rows = _rows(3, seed=6) + _rows(1, seed=7, sampled=False)
    rows[3].update(request_id="greedy", arrival_ms=100.0)  # last in the trace's order
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    captured = [tuple(r["acceptance_seq"]) for r in rows]
    acceptance = f"acceptance={{kind: trace, traces: [{trace}], sampled_draws: redrawn}}"
    drawn = []
    for seed in (0, 0, 1):
        scenario = scenario_from_dict(tiny_scenario(), [acceptance, f"seed={seed}"])
        model = load_acceptance(scenario)
        assert isinstance(model, TraceAcceptance) and model.pool == tuple(captured)
        drawn.append([model.seq_for(i) for i in range(8)])  # each pool entry twice
    assert drawn[0] == drawn[1] and drawn[0] != drawn[2]  # seeded by the run's seed
    for seqs in drawn:
        assert seqs[3] == seqs[7] == captured[3]  # the greedy capture, as captured
        for k in range(3):  # requests k and k + 4 share entry k, not its draws
            assert len({seqs[k], seqs[k + 4], captured[k]}) == 3
    captured_mode = scenario_from_dict(tiny_scenario(), [acceptance.replace("redrawn", "captured")])
    model = load_acceptance(captured_mode)
    assert isinstance(model, TraceAcceptance)
    assert [model.seq_for(i) for i in range(8)] == captured * 2


def test_pinned_cells_draw_their_own_and_shards_draw_as_the_whole_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "sampled.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in _rows(3, seed=11)))
    data = pinned(acceptance={"kind": "trace", "traces": [str(trace)],
                              "sampled_draws": "redrawn"}, temperature=0.8)  # fmt: skip
    model = load_acceptance(scenario_from_dict(data))
    assert isinstance(model, TraceAcceptance)
    cells = [model.seq_for(0, cell) for cell in (None, 0, 1, 2)]
    assert len(set(cells)) == 4  # each cell's first request its own draw, and the run's
    asked: list[tuple[int, int | None]] = []
    seq_for = TraceAcceptance.seq_for

    def spy(self: TraceAcceptance, index: int, cell: int | None = None) -> tuple[int, ...]:
        asked.append((index, cell))
        return seq_for(self, index, cell)

    monkeypatch.setattr(TraceAcceptance, "seq_for", spy)
    whole = run_scenario(scenario_from_dict(data))
    assert {cell for _, cell in asked} == {0, 1, 2}  # the run asks by each request's cell
    assert simulate_sharded(data, 3, SerialExecutor()).metrics == whole
    captured = copy.deepcopy(data)
    captured["acceptance"]["sampled_draws"] = "captured"
    assert run_scenario(scenario_from_dict(captured)) != whole


def test_redrawn_runs_differ_by_seed_where_captured_ones_accept_alike(tmp_path: Path) -> None:
    rows = _rows(6, seed=8)
    data = hand_trace_scenario(tmp_path, rows, gamma=4, duration_s=60.0)

    def accepted(*overrides: str) -> list[int]:
        sampled = ["temperature=0.8", "draft_probs=compact", "top_k=8"]  # short uplinks
        result = simulate(scenario_from_dict(data, [*sampled, *overrides]))
        assert len(result.rounds) > 300
        return [r.num_accepted for r in result.rounds]

    assert accepted("seed=1") == accepted("seed=2")
    redraw = "acceptance.sampled_draws=redrawn"
    assert accepted("seed=1", redraw) != accepted("seed=2", redraw)
    assert accepted("seed=1", redraw) == accepted("seed=1", redraw)


def test_redrawn_without_any_alpha_is_refused_at_its_field(tmp_path: Path) -> None:
    data = hand_trace_scenario(tmp_path, _rows(2, seed=9, sampled=False), gamma=4)
    scenario = scenario_from_dict(data, ["acceptance.sampled_draws=redrawn"])
    with pytest.raises(ConfigError) as info:
        simulate(scenario)
    assert str(info.value) == (
        "config field 'acceptance.sampled_draws': redrawn draws each position from its "
        "acceptance_prob, and no replayed trace has one (a sampled capture's: edgespec trace "
        "--temperature T)"
    )


def test_redrawn_with_a_stop_predictor_or_another_kind_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(
            tiny_scenario(),
            ["acceptance.kind=trace", "acceptance.sampled_draws=redrawn",
             "stop_predictor={policy: {name: threshold}, confusion_tpr: 0.9, confusion_fpr: 0.1}"],
        )  # fmt: skip
    assert str(info.value) == (
        "config field 'acceptance.sampled_draws': redrawn outcomes leave the draft_features a "
        "stop predictor replays, which follow the captured ones; keep captured (the default) "
        "with stop_predictor"
    )
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(tiny_scenario(), ["acceptance={kind: iid, sampled_draws: redrawn}"])
    assert "'acceptance.sampled_draws'" in str(info.value)


def test_an_alpha_per_output_position_or_the_line_is_refused(tmp_path: Path) -> None:
    rows = _rows(1, seed=10)
    rows[0]["acceptance_prob"] = rows[0]["acceptance_prob"][:-1]
    with pytest.raises(ConfigError) as info:
        _workload(tmp_path, rows)
    trace = tmp_path / "trace.jsonl"
    assert str(info.value) == (
        f"config field 'workload.trace': {trace}:1: acceptance_prob: has 199 entries for 200 "
        "output tokens"
    )
