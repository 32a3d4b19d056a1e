"""``dsdsim_compat``: DSD-Sim's simplifications, each by name, on a hand-checked trace
(the costs of tests/sim/helpers.hand_trace_scenario: drafter 10 ms per forwarded token;
server 5 ms + 1 ms per new + 0.1 ms per cached token; 10 ms + 1 µs per byte each way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import hand_trace_scenario

ROW = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
       "drafter_id": 0, "acceptance_seq": [0, 1, 1, 0, 1, 1]}  # fmt: skip


def _rounds(tmp_path: Path, compat: dict[str, bool] | None) -> list[tuple[Any, ...]]:
    data = hand_trace_scenario(tmp_path, [ROW], gamma=2)
    if compat is not None:
        data["dsdsim_compat"] = compat
    result = simulate(scenario_from_dict(data))
    if compat is not None:
        assert result.path.startswith("reference (inlining refused: DSD-Sim's simplifications")
    return [
        (pytest.approx(r.start_s, abs=1e-12), pytest.approx(r.end_s, abs=1e-12),
         pytest.approx(r.draft_s, abs=1e-12), pytest.approx(r.verify_s, abs=1e-12),
         r.num_drafted, r.num_accepted, r.num_committed)
        for r in result.rounds
    ]  # fmt: skip


def test_one_pass_per_round_and_fixed_rounds(tmp_path: Path) -> None:
    # Round 0: one draft pass over the 4-token prompt 0.04; up 88 B → 0.050088; verify 6
    # new 0.011 → 0.061088; accepts 0 (seq[0] = 0) but advances 2; down 76 B → 0.071164.
    # Round 1: one pass 0.01; up 72 B → 0.091236; 3 new, 5 cached 0.0085 → 0.099736;
    # accepts 1, advances 2; down → 0.109812. Round 2: 0.01; up → 0.129884; 3 new, 7
    # cached 0.0087 → 0.138584; accepts 2, advances 2: done after ⌈6 / 2⌉ = 3 rounds.
    assert _rounds(tmp_path, {}) == [
        (0.0, 0.071164, 0.04, 0.011, 2, 0, 2),
        (0.071164, 0.109812, 0.01, 0.0085, 2, 1, 2),
        (0.109812, 0.14866, 0.01, 0.0087, 2, 2, 2),
    ]


def test_each_simplification_alone(tmp_path: Path) -> None:
    """Without fixed rounds the physics decide the length (accepted + 1 per round); without
    one-pass drafting a round of γ = 2 costs two passes."""
    physical = _rounds(tmp_path, None)
    assert [r[4:] for r in physical] == [(2, 0, 1), (2, 2, 3), (1, 1, 2)]
    one_pass = _rounds(tmp_path, {"fixed_rounds": False})
    assert [r[4:] for r in one_pass] == [r[4:] for r in physical]
    assert [r[2] for r in one_pass] == [0.04, 0.01, 0.01]
    assert [r[2] for r in physical] == [0.05, 0.02, 0.01]
    fixed = _rounds(tmp_path, {"one_pass_drafting": False})
    assert [r[4:] for r in fixed] == [(2, 0, 2), (2, 1, 2), (2, 2, 2)]
    assert [r[2] for r in fixed] == [0.05, 0.02, 0.02]


def test_an_unqueued_fused_round_runs_alone_beside_the_targets_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DSD-Sim's ``fused_execute``: a cloud-only round neither waits for nor joins the
    target's batch."""
    from tests.sim.test_fused_switching import D2, F2, _run

    rows = [
        {"request_id": "b", "arrival_ms": 0.0, "prompt_tokens": 40, "output_tokens": 2,
         "drafter_id": 1, "acceptance_seq": [0, 0]},
        {"request_id": "a", "arrival_ms": 400.0, "prompt_tokens": 4, "output_tokens": 3,
         "drafter_id": 0, "acceptance_seq": [1, 1, 1]},
    ]  # fmt: skip
    overrides = ("fused_rounds=cloud_only", "dsdsim_compat.fixed_rounds=false",
                 "dsdsim_compat.one_pass_drafting=false")  # fmt: skip
    result, _ = _run(tmp_path, monkeypatch, rows, [D2, F2, F2, F2, D2, D2], *overrides)
    # b (distributed, γ capped to 1): prefill 40 in one pass 0.4; up 228 B → 0.410228;
    # its batch verifies 41 new tokens, 0.046 → 0.456228.
    (b_batch, *_) = result.batches
    assert [b_batch.start_s, b_batch.end_s] == pytest.approx([0.410228, 0.456228], abs=1e-12)
    # a (cloud-only, decided at 0.4): request 80 B → 0.41008, alone: 4 new 0.009 →
    # 0.41908; the server decides fused again and it runs alone at once, beside b's
    # batch: 1 new, 4 cached 0.0064 → 0.42548; then 1 new, 5 cached 0.0065 → 0.43198.
    a = [r for r in result.rounds if r.request_id == "a"]
    assert [(r.fused, r.queue_s, r.batch_size, r.num_committed) for r in a] == [
        (True, 0.0, 1, 1)
    ] * 3
    assert [r.verify_s for r in a] == [pytest.approx(x, abs=1e-12) for x in (0.009, 0.0064, 0.0065)]
    assert [r.start_s for r in a] == [pytest.approx(x, abs=1e-12) for x in (0.4, 0.41908, 0.42548)]
    assert b_batch.start_s < a[1].start_s and a[2].start_s + 0.0065 < b_batch.end_s
