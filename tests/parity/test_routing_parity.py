"""Parity: every registered routing policy, given the same loads and the same random
stream, sends the same requests to the same servers in the simulator and across real
loopback servers (idle between requests: each request finishes before the next one
arrives, so every load is zero and the decisions exercise order, ids and tie-breaks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")

from edgespec.policies.registry import ROUTING, build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.routing import route
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_server import ServerThread
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
