"""A token-tree trace's captured rounds are the device's: a fused round (drafted by the
server's co-located draft, a chain of γ) takes its accepted length from the request's
acceptance sequence instead, while a distributed round replays the captured tree.
Scenario: tests/sim/helpers.hand_trace_scenario, γ = 3 (static), one request whose
sequence accepts everything and whose captured rounds accept 1 of 5 nodes each."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import hand_trace_scenario

ROW = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 7,
       "drafter_id": 0, "acceptance_seq": [1] * 7, "draft_tree": "2,2,1",
       "rounds": [[5, 1, 9.0, 9.0]] * 4}  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # captured: 5 nodes, 1 accepted, 2 committed, three times; the last token alone
        ("distributed", [(False, 5, 1, 2), (False, 5, 1, 2), (False, 5, 1, 2), (False, 0, 0, 1)]),
        # the sequence: γ 3, all accepted (4 committed), then γ min(3, 7 − 4 − 1) = 2
        ("fused", [(True, 3, 3, 4), (True, 2, 2, 3)]),
    ],
)
@pytest.mark.parametrize("fast", [True, False])
def test_fused_rounds_do_not_replay_the_captured_tree(
    tmp_path: Path, mode: str, expected: list[tuple[bool, int, int, int]], fast: bool
) -> None:
    data = hand_trace_scenario(tmp_path, [ROW], gamma=3, duration_s=5.0)
    result = simulate(scenario_from_dict(data, [f"mode={mode}", f"fast_path={fast}"]))
    got = [(r.fused, r.num_drafted, r.num_accepted, r.num_committed) for r in result.rounds]
    assert got == expected
    (request,) = result.requests
    assert request.num_output_tokens == 7
