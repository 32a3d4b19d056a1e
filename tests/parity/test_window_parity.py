"""Parity: the same window policies, fed by the shared input builder, make the same
decisions in the real runtime (tiny target, loopback gRPC) and in the simulator, given the
same sequence of round outcomes.

The runtime decodes with an n-gram drafter. Whether the drafter's token at output position
p is accepted depends only on the target's tokens before p (a greedy drafter that was
right so far sees exactly the target's prefix), so one acceptance sequence describes the
request whatever γ each round uses; the simulator replays that sequence as a trace. Every
registered window policy must then choose the same γ and mode, round by round, in both
hosts. A fused round is drafted by the server's co-located draft (an n-gram drafter too, so
the same acceptance sequence holds) and the server consults the policy after it; the
runtime's server gets the drafter's policy object, as the simulator's server shares it.

AWC runs a hand-built WC-DNN that reads only the recent acceptance (RTT, TPOT and queue
depth are measured by each host's clock and cannot be equal across hosts; their weights are
0): with this prompt's acceptance (three rejections, then every position accepted) it goes
fused after the rejections and back to distributed as acceptance recovers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

from edgespec.core.types import SamplingParams
from edgespec.policies.registry import WINDOW, build_policy
from edgespec.policies.stop_drafting import DenseLayer
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES, WcDnn
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.runtime.conftest import start_server

PROMPT = (7, 3, 9, 7, 3, 9, 7, 3, 12, 40, 7, 3, 9, 7)
MAX_NEW = 40
WINDOWS: dict[str, dict[str, Any]] = {
    "static": {"gamma": 3},
    "dynamic": {"initial_gamma": 2, "min_gamma": 1, "max_gamma": 6},
    "awc": {"fused_gamma": 3},  # + "file": the hand-built weights, written per test
}


def acceptance_only_wc_dnn() -> WcDnn:
    """raw γ = 2·silu(silu(6·acceptance − 2)): ≈ −0.2 at 0, 1.0 at 0.5, 7.7 at 1."""
    zero = DenseLayer(np.zeros((1, 1)), np.zeros(1))
    weight = np.zeros((len(AWC_FEATURE_NAMES), 1))
    weight[AWC_FEATURE_NAMES.index("recent_acceptance"), 0] = 6.0
    return WcDnn(
        mean=np.zeros(len(AWC_FEATURE_NAMES)),
        scale=np.ones(len(AWC_FEATURE_NAMES)),
        input=DenseLayer(weight, np.array([-2.0])),
        blocks=((zero, zero), (zero, zero)),
        output=DenseLayer(np.array([[2.0]]), np.zeros(1)),
    )


def _params(name: str, tmp_path: Path) -> dict[str, Any]:
    if name != "awc":
        return WINDOWS[name]
    weights = tmp_path / "wc-dnn.json"
    weights.write_text(json.dumps(acceptance_only_wc_dnn().to_json()))
    return {**WINDOWS[name], "file": str(weights)}


@pytest.fixture(scope="module")
def target() -> TransformersTarget:
    return TransformersTarget(tiny_llama(seed=0))


def test_every_registered_window_policy_is_covered() -> None:
    assert set(WINDOWS) == set(WINDOW)


def _acceptance_seq(reference: tuple[int, ...]) -> list[int]:
    drafter, rng = NgramDrafter(), np.random.default_rng(0)
    context = list(PROMPT)
    seq = []
    for token in reference:
        seq.append(int(drafter.propose(context, 1, 0.0, rng).token_ids[0] == token))
        context.append(token)
    return seq


def _simulated_rounds(tmp_path: Path, name: str, seq: list[int]) -> list[tuple[int, int, bool]]:
    trace = tmp_path / "trace.jsonl"
    row = {"request_id": "r", "arrival_ms": 0.0, "prompt_tokens": len(PROMPT),
           "output_tokens": MAX_NEW, "drafter_id": 0, "acceptance_seq": seq}  # fmt: skip
    trace.write_text(json.dumps(row) + "\n")
    data = {
        "seed": 1,
        "duration_s": 60.0,
        "auto_topology": {"devices": [{"count": 1}], "servers": [{"count": 1}]},
        "policies": {"window": {"name": name, "params": _params(name, tmp_path)}},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
        "record_rounds": True,
        "fast_path": False,
    }
    result = simulate(scenario_from_dict(data))
    assert [r.num_output_tokens for r in result.requests] == [MAX_NEW]
    return [(r.num_drafted, r.num_accepted, r.fused) for r in result.rounds]


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_window_decisions_match_between_runtime_and_simulator(
    name: str, target: TransformersTarget, tmp_path: Path
) -> None:
    reference = target_greedy_decode(target, PROMPT, MAX_NEW)
    seq = _acceptance_seq(reference)
    assert 0 < sum(seq) < len(seq)  # some rounds accept, some reject
    policy = build_policy("window", name, _params(name, tmp_path))
    server = start_server(target, draft_factory=NgramDrafter, window=policy)
    try:
        result = generate(
            RemoteVerifier(f"127.0.0.1:{server.port}"),
            NgramDrafter(),
            PROMPT,
            SamplingParams(max_new_tokens=MAX_NEW),
            DraftOptions(session_id=f"parity-{name}"),
            policy,
        )
    finally:
        server.stop(grace_s=0)
    assert result.output_token_ids == reference
    runtime = [(r.num_drafted, r.num_accepted, r.fused) for r in result.rounds]
    assert runtime == _simulated_rounds(tmp_path, name, seq)
    if name == "dynamic":
        assert len({d for d, _, _ in runtime}) > 2  # the window really moved
    if name == "awc":  # it went fused and came back
        modes = [fused for _, _, fused in runtime]
        assert True in modes and modes.index(True) < len(modes) - 1 - modes[::-1].index(False)
