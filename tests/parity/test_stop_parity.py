"""Parity: the same stop policy objects make the same per-token decisions in the real
drafter (tiny models, loopback gRPC) and in the simulator replaying a trace of the pair.

Under greedy decoding, a position's draft features and its acceptance depend only on the
target's tokens before it, so the trace (one acceptance flag and one feature row per output
position, captured as `edgespec trace` does) describes the request whatever the predictor
cuts; the simulator asks the policy about the trace's rows. Every round must then send the
same tokens, run the same draft passes and accept the same count in both hosts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from edgespec.core.types import SamplingParams
from edgespec.learn.traces.acceptance import per_position_acceptance, rejection_continuations
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.registry import STOP, build_policy
from edgespec.policies.routing import RoundRobinRouting
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.testing import noisy_copy, tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.sim.setup.build import Policies
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.policies.stop_helpers import confidence_stop
from tests.runtime.conftest import start_server

PROMPT = (7, 3, 9, 7, 3, 9, 7, 3, 12, 40, 7, 3, 9, 7)
MAX_NEW = 40
GAMMA = 4


def policies() -> dict[str, DraftStopPolicy]:
    """Every registered stop policy (defaults) and hand-built ones that stop often."""
    chosen: dict[str, DraftStopPolicy] = {name: build_policy("stop", name) for name in STOP}
    for level in (0.28, 0.33, 0.4):
        chosen[f"confidence>={level}"] = confidence_stop(level)
    return chosen


@pytest.fixture(scope="module")
def pair() -> tuple[Any, TransformersTarget]:
    model = tiny_llama(seed=0)
    return noisy_copy(model, noise=0.5, seed=1), TransformersTarget(model)


def _simulated_rounds(
    tmp_path: Path, seq: tuple[int, ...], rows: Any, after: Any, policy: DraftStopPolicy
) -> list[tuple[int, int, int]]:
    trace = tmp_path / "trace.jsonl"
    row = {"request_id": "r", "arrival_ms": 0.0, "prompt_tokens": len(PROMPT),
           "output_tokens": MAX_NEW, "drafter_id": 0, "acceptance_seq": list(seq),
           "draft_features": [list(r) for r in rows],
           "rejection_features": [[p, [list(r) for r in rs]] for p, rs in after]}  # fmt: skip
    trace.write_text(json.dumps(row) + "\n")
    data = {
        "seed": 1,
        "duration_s": 60.0,
        "auto_topology": {"devices": [{"count": 1}], "servers": [{"count": 1}]},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
        "stop_predictor": {"policy": {"name": "mlp"}},
        "record_rounds": True,
    }
    injected = Policies(RoundRobinRouting(), FcfsBatching(), StaticWindow(GAMMA), policy)
    result = simulate(scenario_from_dict(data), policies=injected)
    assert [r.num_output_tokens for r in result.requests] == [MAX_NEW]
    return [(r.num_drafted, r.draft_passes, r.num_accepted) for r in result.rounds]


def test_every_stop_policy_decides_alike_in_both_hosts(
    pair: tuple[Any, TransformersTarget], tmp_path: Path
) -> None:
    draft_model, target = pair
    reference = target_greedy_decode(target, PROMPT, MAX_NEW)
    seq, rows = per_position_acceptance(TransformersDraft(draft_model), PROMPT, reference)
    assert rows is not None and 0 < sum(seq) < len(seq)
    drafter = TransformersDraft(draft_model)
    after = rejection_continuations(drafter, PROMPT, reference, seq, GAMMA)
    assert after is not None and len(after) == sum(1 for f in seq[:-1] if not f)
    server = start_server(target)
    cut_somewhere = 0
    try:
        for name, policy in policies().items():
            result = generate(
                RemoteVerifier(f"127.0.0.1:{server.port}"),
                TransformersDraft(draft_model),
                PROMPT,
                SamplingParams(max_new_tokens=MAX_NEW),
                DraftOptions(session_id=f"stop-parity-{name}"),
                StaticWindow(GAMMA),
                stop=policy,
            )
            assert result.output_token_ids == reference, name
            runtime = [(r.num_drafted, r.draft_passes, r.num_accepted) for r in result.rounds]
            assert runtime == _simulated_rounds(tmp_path, seq, rows, after, policy), name
            cut_somewhere += sum(p > d for d, p, _ in runtime)
    finally:
        server.stop(grace_s=0)
    assert cut_somewhere > 0  # some blocks really were cut short
