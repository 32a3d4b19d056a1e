"""FusedRuns' co-located draft time of a one-entry step, memoised per run: the floats of
draft_passes_s (a pure function of the cost model and the entry), at most MEMO_ENTRIES
kept; a step of several entries is computed every time."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from edgespec.hardware.cost_models import draft_passes_s
from edgespec.sim.loop import fused
from edgespec.sim.loop.fused import FusedRuns


class _CountingCost:
    """batch_time_s = a made-up affine cost, its calls counted (test-only)."""

    def __init__(self) -> None:
        self.calls = 0

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float:
        self.calls += 1
        return 1e-3 * batch_size + 1e-5 * num_linear + 1e-9 * num_interactions + 1e-7 * num_cached


def _session(prompt: int, committed: int, unseen: int, gamma: int) -> Any:
    request = SimpleNamespace(num_prompt_tokens=prompt)
    return SimpleNamespace(
        request=request,
        committed=committed,
        fused_unseen=unseen,
        gamma_eff=gamma,
        fused=True,
        index=prompt,
    )


def _runs() -> FusedRuns:
    state = SimpleNamespace(cloud_only=False, cloud_only_draft_pass=False)
    return FusedRuns(SimpleNamespace(state=state))  # type: ignore[arg-type]


def test_one_entry_is_memoised_with_draft_passes_s_floats() -> None:
    cost = _CountingCost()
    server: Any = SimpleNamespace(draft_cost=cost, in_parts=set())
    runs = _runs()
    s = _session(100, 7, 12, 4)
    expected = draft_passes_s(_CountingCost(), [(107, 12, 4)])
    assert runs.draft_step_s(server, [s]) == expected
    assert cost.calls == 4  # γ passes
    assert runs.draft_step_s(server, [s]) == expected
    assert server.batch_draft_s == expected
    assert cost.calls == 4  # the memo's
    two = [s, _session(50, 3, 0, 2)]
    assert runs.draft_step_s(server, two) == draft_passes_s(
        _CountingCost(), [(107, 12, 4), (53, 0, 2)]
    )
    assert runs.draft_step_s(server, two) > 0 and cost.calls == 12  # not memoised


def test_the_memo_stops_growing_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fused, "MEMO_ENTRIES", 1)
    cost = _CountingCost()
    server: Any = SimpleNamespace(draft_cost=cost, in_parts=set())
    runs = _runs()
    first, second = _session(10, 0, 10, 1), _session(20, 0, 20, 1)
    for s in (first, second, first, second):
        runs.draft_step_s(server, [s])
    assert cost.calls == 3  # the first kept, the second computed both times
