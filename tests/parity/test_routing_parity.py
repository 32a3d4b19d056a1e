"""Parity: every registered routing policy, given the same loads and the same random
stream, sends the same requests to the same servers in the simulator and across real
loopback servers (idle between requests: each request finishes before the next one
arrives, so every load is zero and the decisions exercise order, ids and tie-breaks).

Under load (:func:`test_jsq_routes_concurrent_sessions_alike`): many sessions open at once,
queues and busy servers; every load the simulator's join-shortest-queue saw (a server's
queue, active sessions and ``busy``) is answered as a server's ``Stats`` to the drafter's
:func:`~edgespec.runtime.edge.routing.route`, which must choose the same servers. Both
build a load by :func:`~edgespec.policies.loads.server_load`. Where the hosts still differ
(by design, not by builder): the simulator counts a session on its server from the instant
it is routed until its last verdict on the server (sim/loop/device.py, sim/loop/server.py);
a real server counts it from the OpenSession it received until the CloseSession, or its
idle expiry (its finished sessions included), so a route racing another's OpenSession, or
following a last verdict before its CloseSession, reads a load the simulator never shows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")

from edgespec.core.types import ServerLoad
from edgespec.policies.registry import ROUTING, build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.routing import route
from edgespec.runtime.messages import ServerStats
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from edgespec.sim.model import router as sim_router
from edgespec.sim.model.entities import ServerState
from edgespec.sim.model.rng import spawn_generator
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.runtime.conftest import start_server

NUM_REQUESTS = 12
SEED = 5


@pytest.fixture(scope="module")
def servers() -> Iterator[list[ServerThread]]:
    target = TransformersTarget(tiny_llama(seed=0))
    started = [start_server(target) for _ in range(3)]
    yield started
    for server in started:
        server.stop(grace_s=0)


def test_every_registered_routing_policy_is_covered() -> None:
    assert set(ROUTING) == {"jsq", "random", "round_robin"}


def _simulated(tmp_path: Path, name: str) -> list[int]:
    trace = tmp_path / "trace.jsonl"
    rows = [
        {"request_id": f"r{i:02d}", "arrival_ms": 10_000.0 * i, "prompt_tokens": 8,
         "output_tokens": 4, "drafter_id": 0, "acceptance_seq": [1, 0, 1, 1]}
        for i in range(NUM_REQUESTS)
    ]  # fmt: skip
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = {
        "seed": SEED,
        "duration_s": 10.0 * NUM_REQUESTS + 5,
        "auto_topology": {"devices": [{"count": 1}], "servers": [{"count": 3}]},
        "policies": {"routing": {"name": name}},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
    }
    requests = simulate(scenario_from_dict(data, ["fast_path=false"])).requests
    assert len(requests) == NUM_REQUESTS
    return [r.server_id for r in sorted(requests, key=lambda r: r.request_id)]


@pytest.mark.parametrize("name", sorted(ROUTING))
def test_routing_decisions_match(name: str, servers: list[ServerThread], tmp_path: Path) -> None:
    verifiers = [RemoteVerifier(f"127.0.0.1:{s.port}") for s in servers]
    policy = build_policy("routing", name, {})
    rng = spawn_generator(SEED, "routing")  # the simulator's routing stream for this seed
    real = [route(verifiers, policy, rng).server_index for _ in range(NUM_REQUESTS)]
    assert real == _simulated(tmp_path, name)
    if name != "round_robin":
        assert len(set(real)) > 1  # the tie-breaks really drew from the stream


State = tuple[int, int, int, bool]  # (server_id, len(queue), num_active, busy)
NUM_CONCURRENT = 40


def _concurrent_routes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> list[tuple[list[State], int]]:
    """Each route of a simulated run with :data:`NUM_CONCURRENT` overlapping sessions
    (one per device, 30 ms apart, 64 tokens each) across 3 servers by join-shortest-queue:
    every server's state as the policy was called, and the server it chose."""
    seen: list[tuple[list[State], int]] = []
    original = sim_router.Router.route

    def recorded(
        router: sim_router.Router, cell_index: int, t: float, inclusive: bool | None
    ) -> ServerState:
        states = [(s.server_id, len(s.queue), s.num_active, s.busy) for s in router.servers]
        assert list(router.cells[cell_index].view) == [
            ServerLoad(server_id=i, queue_depth=q, num_active_sessions=a, busy=b)
            for i, q, a, b in states
        ]
        chosen = original(router, cell_index, t, inclusive)
        seen.append((states, chosen.server_id))
        return chosen

    monkeypatch.setattr(sim_router.Router, "route", recorded)
    trace = tmp_path / "concurrent.jsonl"
    rows = [
        {"request_id": f"r{i:02d}", "arrival_ms": 30.0 * i, "prompt_tokens": 8,
         "output_tokens": 64, "drafter_id": i, "acceptance_seq": [1, 0, 1, 1]}
        for i in range(NUM_CONCURRENT)
    ]  # fmt: skip
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = {
        "seed": SEED,
        "duration_s": 30.0,
        "auto_topology": {"devices": [{"count": NUM_CONCURRENT}], "servers": [{"count": 3}]},
        "policies": {"routing": {"name": "jsq"}},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
    }
    simulate(scenario_from_dict(data, ["fast_path=false"]))
    return seen


class Answered:
    """A server's ``Stats`` answer: the counters a real server with this state reports."""

    def __init__(self, queue_depth: int, num_sessions: int, busy: bool) -> None:
        self._stats = ServerStats(
            queue_depth=queue_depth, num_sessions=num_sessions, num_batches=0,
            mean_batch_size=0.0, max_batch_size=0, batch_size_histogram=(),
            num_tokens_forwarded=0, num_cache_hits=0, num_cache_misses=0, cache_hit_ratio=0.0,
            num_evictions=0, num_reprefills=0, num_cached_tokens=0, num_cached_bytes=0,
            num_expired_sessions=0, num_rejected=0, busy=busy,
        )  # fmt: skip

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        return self._stats


def _swap_matters(states: list[State]) -> bool:
    """The least loaded servers by (queue, sessions) are not those by (sessions, queue)."""
    by_queue = min((q, a) for _, q, a, _ in states)
    by_sessions = min((a, q) for _, q, a, _ in states)
    return {i for i, q, a, _ in states if (q, a) == by_queue} != {
        i for i, q, a, _ in states if (a, q) == by_sessions
    }


def test_jsq_routes_concurrent_sessions_alike(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    routes = _concurrent_routes(monkeypatch, tmp_path)
    assert len(routes) == NUM_CONCURRENT
    assert max(a for states, _ in routes for _, _, a, _ in states) >= 10  # many open at once
    assert sum(_swap_matters(states) for states, _ in routes) >= 3  # loads that disagree
    policy = build_policy("routing", "jsq", {})
    rng = spawn_generator(SEED, "routing")  # the simulator's routing stream for this seed
    real = []
    for states, _ in routes:
        answers = [Answered(q, a, b) for _, q, a, b in states]
        real.append(route(answers, policy, rng).server_index)
    assert real == [chosen for _, chosen in routes]
