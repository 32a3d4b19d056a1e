"""After a fused run the device's draft catches up once, in its first distributed round,
on the tokens committed during the run; its later rounds draft as usual. Costs and the
scripted window policy as in tests/sim/test_fused_switching.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.hardware.cost_models import WispCost
from edgespec.policies.estimator import WispCoefficients
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.setup import build
from edgespec.sim.setup.resolve import ResolvedScenario
from tests.sim.test_fused_switching import D2, F2, _at, _rounds, _run

ROW = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 12,
       "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1]}  # fmt: skip


@pytest.mark.parametrize("hops", [False, True])
@pytest.mark.parametrize("fast", [True, False])
def test_the_device_catches_up_once_after_a_fused_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool, hops: bool
) -> None:
    script = [D2, F2, D2, D2, D2]
    result, policy = _run(tmp_path, monkeypatch, [ROW], script, f"fast_path={fast}", hops=hops)
    # Rounds 0 and 1 as in test_distributed_fused_fused_distributed_every_timestamp
    # (total 5 committed after the fused round, which ends at 0.117832, delivered 0.127908).
    # Round 2, distributed: the device saw a context of 7 when the run began, so its first
    # pass forwards the 2 tokens committed since: 0.02 + 0.01 = 0.03; uplink 72 B
    # → 0.16798; verify 3 new, 8 cached: 0.0088 → 0.17678; accepts 2, commits 3 (total
    # 8); down 80 B → 0.18686.
    # Round 3: caught up, one token per pass: 0.02; uplink 72 B → 0.216932; 3 new, 11
    # cached: 0.0091 → 0.226032; accepts 2, commits 3 (total 11); down 80 B → 0.236112.
    # Round 4: γ = min(2, 12 − 11 − 1) = 0, no drafting; uplink 64 B → 0.246176; 1 new,
    # 14 cached: 0.0074 → 0.253576; commits 1; down 72 B → 0.263648.
    assert _rounds(result) == [
        (0, False, 0.0, *_at(0.081168, 0.05, 0.010088, 0.0, 0.011, 0.01008), 2, 2, 3),
        (1, True, *_at(0.081168, 0.127908, 0.018, 0.010064, 0.0, 0.0086, 0.010076), 2, 1, 2),
        (2, False, *_at(0.127908, 0.18686, 0.03, 0.010072, 0.0, 0.0088, 0.01008), 2, 2, 3),
        (3, False, *_at(0.18686, 0.236112, 0.02, 0.010072, 0.0, 0.0091, 0.01008), 2, 2, 3),
        (4, False, *_at(0.236112, 0.263648, 0.0, 0.010064, 0.0, 0.0074, 0.010072), 0, 0, 1),
    ]
    assert len(policy.seen) == 5  # once per round
    (request,) = result.requests
    assert request.draft_s == pytest.approx(0.05 + 0.018 + 0.03 + 0.02, abs=1e-12)


@pytest.mark.parametrize("fast", [True, False])
def test_a_device_whose_first_round_was_fused_catches_up_on_the_prompt_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
           "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 1, 0]}  # fmt: skip
    result, _ = _run(tmp_path, monkeypatch, [row], [F2, D2], f"fast_path={fast}")
    # Round 0, fused: request with the prompt, 80 B 0.01008; step = co-located draft
    # (context 4 unseen: 1 + 2·4 = 9 ms, then 3 ms) 0.012 + verify 6 new 0.011 → 0.03308;
    # accepts 2, commits 3; down 80 B → 0.04316.
    # Round 1, distributed: the device's draft has seen nothing, so its first pass forwards
    # the whole context of 7: 0.07 + 0.01 = 0.08; uplink 72 B (no prompt ids: the server
    # has them) → 0.133232; verify 3 new, 6 cached: 0.0086 → 0.141832; accepts 2, commits
    # 3 (done); down 80 B → 0.151912.
    assert _rounds(result) == [
        (0, True, 0.0, *_at(0.04316, 0.012, 0.01008, 0.0, 0.011, 0.01008), 2, 2, 3),
        (1, False, *_at(0.04316, 0.151912, 0.08, 0.010072, 0.0, 0.0086, 0.01008), 2, 2, 3),
    ]


def test_the_catch_up_pass_reads_the_context_the_device_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The device's draft also pays 1 ms per cached token it reads (10 ms per forwarded
    token as before), so the context each pass reads shows in the draft times."""
    real = build.build_fleet

    def reading(
        resolved: ResolvedScenario, cells: Any = None
    ) -> tuple[list[DeviceState], list[ServerState], Any]:
        devices, servers, layout = real(resolved, cells)
        for device in devices:
            device.draft_cost = WispCost(WispCoefficients(0.01, 0.0, 0.001, 0.0))
        return devices, servers, layout

    monkeypatch.setattr(build, "build_fleet", reading)
    result, _ = _run(tmp_path, monkeypatch, [ROW], [D2, F2, D2, D2, D2], "fast_path=true")
    # Round 2 catches up on 2 of a context of 9: 2 new after 7 read (0.02 + 0.007), then
    # 1 new after 10 (0.01 + 0.010). Round 3 after a context of 12: 0.022, then 0.023.
    draft = [r.draft_s for r in result.rounds]
    assert draft[2:4] == _at(0.047, 0.045)
