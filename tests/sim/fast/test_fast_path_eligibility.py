"""The specialised handler sets fail closed: a model they would inline but is not exactly
the inlined class sends the run to the reference set, which says why."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from edgespec.sim.model.network import Link
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.setup import resolve
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.helpers import tiny_scenario


@dataclass(frozen=True, slots=True)
class SlowLink(Link):
    """Another link model: 5 ms more per message."""

    def latency_s(self, payload_bytes: int, rng: UniformStream) -> float:
        return Link.latency_s(self, payload_bytes, rng) + 0.005


def _run(fast: bool) -> SimResult:
    window = {"name": "static", "params": {"gamma": 4}}
    data = tiny_scenario(
        policies={"routing": {"name": "jsq"}, "batching": {"name": "fcfs"}, "window": window}
    )
    return simulate(
        scenario_from_dict(data, ["duration_s=5", f"fast_path={fast}"]), keep_records=False
    )


def test_the_path_taken_is_reported() -> None:
    assert _run(True).path == "fast (inlined: static window, fcfs batching, jsq routing)"
    assert _run(False).path == "reference (fast_path=false)"


def test_another_link_model_runs_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _run(True)
    monkeypatch.setattr(resolve, "Link", SlowLink)
    fast, slow = _run(True), _run(False)
    assert fast.path == "reference (inlining refused: device link SlowLink is not Link)"
    assert fast.metrics == slow.metrics
    assert fast.metrics != plain.metrics  # SlowLink really ran
