"""A sampled token tree's trace (``edgespec trace --tree --temperature``) on tiny models: its
records keep the sampling and the rounds it ran, no α per position, and the simulator
replays those rounds at the same sampling without a warning and without draft rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.learn.traces.records import TraceRecord, read_trace
from edgespec.sim.commands.checks import trace_sampling_warnings
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.learn.traces.test_command import pair  # noqa: F401


def _capture(models: tuple[Path, Path], tmp_path: Path, name: str) -> list[TraceRecord]:
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"w5 w{9 + i} w7 w5"}) + "\n" for i in (0, 1)))
    target, draft = models
    args = ["trace", "--target", str(target), "--draft", str(draft), "--dataset", str(prompts)]
    args += ["--max-new-tokens", "12", "--threads", "1", "--tree", "2,2,1", "--seed", "5"]
    args += ["--temperature", "0.8", "--top-k", "6", "--json", str(tmp_path / f"{name}.json")]
    assert main([*args, "--out", str(tmp_path / f"{name}.jsonl")]) == 0
    return read_trace(tmp_path / f"{name}.jsonl")


def test_a_sampled_tree_records_its_rounds_and_replays_them(
    pair: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = _capture(pair, tmp_path, "t")
    assert [(r.temperature, r.top_k, r.draft_tree) for r in records] == [(0.8, 6, "2,2,1")] * 2
    assert all(r.acceptance_prob is None and r.draft_row_entries is None for r in records)
    assert all(r.lossless is None and r.output_tokens == 12 for r in records)
    assert any(rnd.gamma > 3 for r in records for rnd in r.rounds)  # more nodes than depths
    # a draft pass per depth: 2,2,1 at γ 4 is 4 deep (the budget's last rounds shallower)
    assert max(rnd.passes for r in records for rnd in r.rounds) == 4
    assert all(rnd.num_accepted <= rnd.passes <= rnd.gamma for r in records for rnd in r.rounds)
    for r in records:  # the acceptance sequence is the rounds' (one zero after each)
        flags = [f for rnd in r.rounds for f in [1] * rnd.num_accepted + [0]][: r.output_tokens]
        assert list(r.acceptance_seq) == flags
    again = _capture(pair, tmp_path, "again")  # seeded: the same draws, round for round
    assert [r.rounds[i].gamma for r in again for i in range(len(r.rounds))] == [
        r.rounds[i].gamma for r in records for i in range(len(r.rounds))
    ]
    assert [r.acceptance_seq for r in again] == [r.acceptance_seq for r in records]
    [row] = json.loads((tmp_path / "t.json").read_text())["summary"]
    assert row["expected_acceptance"] is None and row["mean_row_entries"] is None
    assert "sampled at T = 0.8, top-k 6" in capsys.readouterr().err
    data = {
        "duration_s": 600.0,
        "temperature": 0.8,
        "top_k": 6,
        "auto_topology": {"devices": [{"count": 2}], "servers": [{"count": 1}]},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(tmp_path / "t.jsonl")},
        "record_rounds": True,
    }
    scenario = scenario_from_dict(data)
    assert trace_sampling_warnings(scenario) == []  # captured as the scenario samples
    sim = simulate(scenario)
    for r in records:
        replayed = [
            (x.num_drafted, x.num_accepted, x.draft_passes)
            for x in sim.rounds
            if x.request_id == r.request_id
        ]
        assert replayed == [(rnd.gamma, rnd.num_accepted, rnd.passes) for rnd in r.rounds]
    [greedy] = trace_sampling_warnings(scenario_from_dict({**data, "temperature": 0.0}))
    assert "captured at temperature 0.8 with top-k 6, replayed greedy: its rounds" in greedy
