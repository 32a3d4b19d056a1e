"""What the batching policy and the round records see of a token-tree round: N̂ᵛ = α̂ ×
the round's draft positions (the tree's depth, 3, not its node count), α̂ over the
positions drafted so far with the prior 0.7 of weight 4 (policies/slo.py), and the
token-speed deadline built from it (Eq. 6). Trace and costs: tests/sim/test_tree_trace.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.policies import registry
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import Tolerance
from tests.sim.test_modes import _RecordingFifo
from tests.sim.test_tree_trace import _scenario

EXACT: Tolerance = {"abs": 1e-12}
TARGET = 4.0  # tokens per second


def test_tree_rounds_expect_alpha_times_depth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batching = _RecordingFifo()
    monkeypatch.setitem(registry.BATCHING, "recording", lambda: batching)
    data = _scenario(tmp_path)
    data["slo_classes"] = {"std": TARGET}
    data["auto_topology"]["devices"][0]["slo_mix"] = {"std": 1.0}
    data["deadline_rule"] = "token_speed"
    data["policies"]["batching"] = {"name": "recording"}
    result = simulate(scenario_from_dict(data))
    seen = [(p.session_id, p.num_draft_tokens, p.expected_accepted) for p in batching.seen]
    # a: α̂ = 0.7 (nothing drafted yet), (2 + 2.8) / (3 + 4), (3 + 2.8) / (6 + 4), each × 3
    # (round 2 is capped to γ 1 but replays the captured tree: depth 3, 6 nodes);
    # b: 0.7, then (0 + 2.8) / (3 + 4) = 0.4, × 3; its last block drafts nothing.
    assert seen == [
        ("a", 5, pytest.approx(2.1, **EXACT)),
        ("b", 4, pytest.approx(2.1, **EXACT)),
        ("a", 3, pytest.approx(4.8 / 7 * 3, **EXACT)),
        ("b", 7, pytest.approx(1.2, **EXACT)),
        ("b", 0, 0.0),
        ("a", 6, pytest.approx(1.74, **EXACT)),
    ]
    a = [r for r in result.rounds if r.request_id == "a"]
    # deadline = arrival at the server + N̂ᵛ / 4 − this round's draft − the last round's network
    # round 0: 0.06 + 0.01012 + 2.1 / 4 − 0.06 − 0
    # round 2: 0.153964 + 0.03 + 0.010112 + 1.74 / 4 − 0.03 − (0.010088 + 0.010076)
    assert [r.deadline_s for r in a] == [
        pytest.approx(0.07012 + 0.525 - 0.06, **EXACT),
        pytest.approx(0.0942 + 0.010088 + 4.8 / 7 * 3 / TARGET - (0.01012 + 0.01008), **EXACT),
        pytest.approx(0.153964 + 0.010112 + 0.435 - 0.020164, **EXACT),
    ]
    third: tuple[object, ...] = (a[2].start_s, a[2].draft_s, a[2].uplink_s)
    assert third == (
        pytest.approx(0.153964, **EXACT),
        pytest.approx(0.03, **EXACT),
        pytest.approx(0.010112, **EXACT),
    )
    # the pending entry's deadline is the round record's
    assert [p.deadline_s for p in batching.seen if p.session_id == "a"] == [r.deadline_s for r in a]
