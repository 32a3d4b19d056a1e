"""Events at the same instant, made exact with dyadic costs (every time below is a sum
of powers of two, so float arithmetic is exact and ties are real ties): a device that
takes up its next request at the instant another device's block reaches the server routes
it before that block is queued, as the kernel orders DELIVER before ARRIVE, on both paths
(the fast path's lazy inbound queues must not count the block early).

Costs: drafter 2⁻⁶ s per forwarded token; server 2⁻⁷ s + 2⁻⁸ s per new token; link
one way 2⁻⁶ s + bytes / 2²⁰ B/s (RTT 31.25 ms, 8.388608 Mbit/s), no jitter or loss."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from edgespec.core.types import ServerLoad
from edgespec.policies import registry
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import write_wisp_profile

UP = 2**-6 + 76 / 2**20  # 64 + 4·(1 + 2 prompt ids) bytes; the downlink is 76 bytes too
R1_DONE = 2 * 2**-6 + UP + (2**-7 + 3 * 2**-8) + UP  # draft, up, verify 3 new, down


class _Seen:
    """Routes every request to server 0, keeping what it saw (test-only)."""

    loads: ClassVar[list[tuple[tuple[int, int, int], ...]]] = []

    def route(self, loads: Sequence[ServerLoad], rng: np.random.Generator) -> int:
        self.loads.append(tuple((s.server_id, s.queue_depth, s.num_active_sessions) for s in loads))
        return 0


def _row(request_id: str, arrival_s: float, device: int) -> dict[str, Any]:
    return {"request_id": request_id, "arrival_ms": arrival_s * 1000, "prompt_tokens": 2,
            "output_tokens": 2, "drafter_id": device, "acceptance_seq": [1, 1]}  # fmt: skip


@pytest.mark.parametrize("fast", [True, False])
def test_routing_at_a_delivery_does_not_see_a_block_arriving_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    monkeypatch.setattr(_Seen, "loads", [])
    monkeypatch.setitem(registry.ROUTING, "seen", _Seen)
    # r1 (device 0) finishes at R1_DONE, when r2 (queued on device 0 at 1 ms) starts;
    # q1 (device 1) starts so that its block, drafted and sent alike, arrives then.
    q1_start = R1_DONE - 2 * 2**-6 - UP
    assert q1_start * 1000 / 1000 == q1_start
    rows = [_row("r1", 0.0, 0), _row("r2", 0.001, 0), _row("q1", q1_start, 1)]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    draft = write_wisp_profile(tmp_path / "draft.yaml", 2**-6, 0.0, 0.0, 0.0)
    server = write_wisp_profile(tmp_path / "server.yaml", 2**-8, 0.0, 0.0, 2**-7)
    data = {
        "seed": 1,
        "duration_s": 1.0,
        "links": {"default": {"rtt_ms": 31.25, "bandwidth_mbps": 8.388608}},
        "auto_topology": {
            "devices": [{"count": 2, "cost_model": {"kind": "wisp", "profile": draft}}],
            "servers": [{"count": 2, "cost_model": {"kind": "wisp", "profile": server}}],
        },
        "policies": {
            "window": {"name": "static", "params": {"gamma": 1}},
            "routing": {"name": "seen"},
        },
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
    }
    result = simulate(scenario_from_dict(data, [f"fast_path={fast}"]))
    finish = {r.request_id: r.finish_s for r in result.requests}
    assert finish["r1"] == R1_DONE
    assert [b.start_s for b in result.batches] == [
        2 * 2**-6 + UP,
        R1_DONE,
        R1_DONE + 2 * 2**-6 + UP,
    ]
    # routing r1 at 0, q1 at q1_start (r1 active on server 0), r2 at R1_DONE: r1 has left,
    # q1 is active and its block not yet queued
    assert _Seen.loads == [
        ((0, 0, 0), (1, 0, 0)),
        ((0, 0, 1), (1, 0, 0)),
        ((0, 0, 1), (1, 0, 0)),
    ]
