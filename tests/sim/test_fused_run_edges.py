"""Fused rounds at their edges: which runs may fuse at all (fused_run.fusing), what the
co-located draft forwards when a second fused run begins, and a fused round's window
capped to the tokens left. Costs and the scripted policy: tests/sim/test_fused_switching.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from edgespec.policies.fusing import fusing
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.window import DynamicWindow, StaticWindow
from tests.sim.test_fused_switching import D2, F2, _at, _rounds, _run


@dataclass
class _Declares:
    may_fuse: ClassVar[bool] = False

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(2)


class _Unknown:
    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(2)


@pytest.mark.parametrize(
    ("window", "mode", "expected"),
    [
        (StaticWindow(2, fused=True), "centralized", False),
        (StaticWindow(2), "fused", True),
        (_Unknown(), "fused", True),
        (StaticWindow(2), "distributed", False),
        (StaticWindow(2, fused=True), "distributed", True),
        (DynamicWindow(), "distributed", False),
        (_Declares(), "distributed", False),
        (_Unknown(), "distributed", None),
        (_Unknown(), "centralized", False),
    ],
)
def test_which_runs_may_fuse(window: object, mode: str, expected: bool | None) -> None:
    assert fusing(window, mode) is expected


def test_a_second_fused_run_forwards_only_what_the_server_has_not_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 9,
           "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 1, 0, 1, 1, 0]}  # fmt: skip
    result, _ = _run(tmp_path, monkeypatch, [row], [F2, D2, F2], "fast_path=true")
    # Rounds 0 (fused, 3 committed) and 1 (distributed, 3 more): as in test_fused_catch_up.
    # Round 2, fused at 0.151912: request 64 B 0.010064 → 0.161976; the co-located draft
    # saw a context of 4 + 3 at the end of round 0, so of 10 it forwards 3: 1 + 2·3 = 7 ms,
    # then 3 ms; verify 3 new, 9 cached 0.0089 → 0.180876; accepts 2, commits 3 (done);
    # down 80 B → 0.190956.
    assert _rounds(result)[2] == (
        2, True, *_at(0.151912, 0.190956, 0.01, 0.010064, 0.0, 0.0089, 0.01008), 2, 2, 3,
    )  # fmt: skip


def test_a_fused_rounds_window_leaves_the_last_token_to_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 5,
           "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 1]}  # fmt: skip
    slo = ["slo_classes={std: 4.0}", "auto_topology.devices.0.slo_mix={std: 1.0}"]
    overrides = [*slo, "deadline_rule=token_speed", "fast_path=true"]
    result, _ = _run(tmp_path, monkeypatch, [row], [F2, F2], *overrides)
    # Round 0 commits 3 (ends 0.03308). Round 1, queued then: γ = min(2, 5 − 3 − 1) = 1,
    # one co-located pass 3 ms; verify 2 new, 6 cached 0.0076 → 0.04368; accepts 1,
    # commits 2 (done); down 76 B 0.010076 → 0.053756.
    assert _rounds(result) == [
        (0, True, 0.0, *_at(0.04316, 0.012, 0.01008, 0.0, 0.011, 0.01008), 2, 2, 3),
        (1, True, *_at(0.03308, 0.053756, 0.003, 0.0, 0.0, 0.0076, 0.010076), 1, 1, 2),
    ]
    # Eq. 6 for round 1: queued at 0.03308, N̂ᵛ = (2 + 2.8) / (2 + 4) · 1 = 0.8 at 4 tokens/s,
    # no device drafting, the last round's network: the fused request up and its tokens down
    assert result.rounds[1].deadline_s == pytest.approx(0.03308 + 0.2 - 0.02016, abs=1e-12)
