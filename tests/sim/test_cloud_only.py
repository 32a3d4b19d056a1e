"""``fused_rounds: cloud_only`` (DSD §4.4, DSD-Sim): a fused round drafts nothing, verifies
one position and commits the target's own token; with ``cloud_only_draft_pass`` it also pays
one co-located draft pass (DSD-Sim's γ = 1 for a fused conversation). Every timestamp by
hand, with the costs of tests/sim/test_fused_switching.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.config import ConfigError
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario
from tests.sim.test_fused_switching import D2, F2, SWITCHING_ROW, _at, _rounds, _run


@pytest.mark.parametrize("fast", [True, False])
def test_cloud_only_rounds_commit_one_token_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    result, _ = _run(
        tmp_path, monkeypatch, [SWITCHING_ROW], [D2, F2, F2, D2, D2],
        f"fast_path={fast}", "fused_rounds=cloud_only",
    )  # fmt: skip
    # Round 0 as in test_fused_switching: verdict 0.071088, commits 3, down → 0.081168.
    # Round 1, cloud-only, decided on the device at 0.081168: request 64 B → 0.091232;
    # nothing drafted; verify 1 new, 6 cached: 0.0066 → 0.097832; commits 1 (total 4);
    # down 72 B 0.010072 → 0.107904.
    # Round 2, decided by the server at 0.097832: verify 1 new, 7 cached 0.0067 →
    # 0.104532; commits 1 (total 5); down 72 B → 0.114604.
    # Round 3, distributed, decided by the server at 0.104532: the device starts at
    # 0.114604 and catches up on the fused run's 2 tokens: 0.02 + 0.01; uplink 72 B →
    # 0.154676; verify 3 new, 8 cached 0.0088 → 0.163476; seq[5:7] = 1, 1: commits 3
    # (total 8); down 80 B → 0.173556.
    # Round 4: its draft forwards the bonus token: 0.01 + 0.01 → 0.193556; up 72 B →
    # 0.203628; verify 3 new, 11 cached 0.0091 → 0.212728; commits 3 (total 11, done);
    # down 80 B → 0.222808.
    assert _rounds(result) == [
        (0, False, 0.0, *_at(0.081168, 0.05, 0.010088, 0.0, 0.011, 0.01008), 2, 2, 3),
        (1, True, *_at(0.081168, 0.107904, 0.0, 0.010064, 0.0, 0.0066, 0.010072), 0, 0, 1),
        (2, True, *_at(0.097832, 0.114604, 0.0, 0.0, 0.0, 0.0067, 0.010072), 0, 0, 1),
        (3, False, *_at(0.114604, 0.173556, 0.03, 0.010072, 0.0, 0.0088, 0.01008), 2, 2, 3),
        (4, False, *_at(0.173556, 0.222808, 0.02, 0.010072, 0.0, 0.0091, 0.01008), 2, 2, 3),
    ]


def test_the_wasted_draft_pass_costs_one_colocated_pass_per_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = _run(
        tmp_path, monkeypatch, [SWITCHING_ROW], [D2, F2, F2, D2, D2],
        "fused_rounds=cloud_only", "cloud_only_draft_pass=true",
    )  # fmt: skip
    # Round 1: one co-located pass over the unseen context of 7 (1 + 2·7 = 15 ms) before
    # the 6.6 ms verification → 0.112832; down → 0.122904. Round 2: one pass over 1 token
    # (3 ms) + 6.7 ms → 0.122532; down → 0.132604; round 3 starts there.
    rounds = _rounds(result)
    assert rounds[1:3] == [
        (1, True, *_at(0.081168, 0.122904, 0.015, 0.010064, 0.0, 0.0066, 0.010072), 0, 0, 1),
        (2, True, *_at(0.112832, 0.132604, 0.003, 0.0, 0.0, 0.0067, 0.010072), 0, 0, 1),
    ]
    assert rounds[3][2] == pytest.approx(0.132604, abs=1e-12)


def test_the_wasted_pass_needs_cloud_only() -> None:
    with pytest.raises(ConfigError, match="cloud_only_draft_pass.*needs fused_rounds: cloud_only"):
        scenario_from_dict(tiny_scenario(cloud_only_draft_pass=True))
    with pytest.raises(ConfigError, match="fused_rounds"):
        scenario_from_dict(tiny_scenario(fused_rounds="fused"))
