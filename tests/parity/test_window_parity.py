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

Both fused-rounds settings run: ``colocated`` (the scenario's default; the runtime server
has the n-gram draft) and ``cloud_only`` (``fused_rounds: cloud_only`` in the scenario,
``fused_rounds="cloud_only"`` in the server's config, no draft on the server: a fused round
sends nothing and commits the target's own token). Each host's policy object is wrapped
to record its decisions: both hosts must make the same ones, and record the same rounds
(γ, sent, accepted, committed, fused).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

from edgespec.core.types import RoundRecord, SamplingParams
from edgespec.policies.fusing import fusing
from edgespec.policies.interfaces import PairStateWindow, WindowDecision, WindowObservation
from edgespec.policies.registry import WINDOW, build_policy
from edgespec.policies.stop_drafting import DenseLayer
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES, WcDnn
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.sim.setup.build import build_policies
from edgespec.sim.setup.scenario import Scenario, scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.runtime.conftest import start_server
from tests.runtime.fused_helpers import ScriptedWindow

PROMPT = (7, 3, 9, 7, 3, 9, 7, 3, 12, 40, 7, 3, 9, 7)
FUSED_ROUNDS = ("colocated", "cloud_only")
Round = tuple[int, bool, int, int, int]  # γ, fused, sent, accepted, committed
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


class Recorded:
    """A window policy that records each decision it makes (its pair state forwarded)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.decisions: list[WindowDecision] = []

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        decision: WindowDecision = self.inner.next_window(obs)
        self.decisions.append(decision)
        return decision

    def pair_state(self, pair: str) -> tuple[float, ...]:
        inner = self.inner
        return inner.pair_state(pair) if isinstance(inner, PairStateWindow) else ()

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None:
        if isinstance(self.inner, PairStateWindow):
            self.inner.restore_pair_state(pair, state)


def _rounds(policy: Recorded, records: Any) -> list[Round]:
    """Each round with the decision it ran with: one decision per round."""
    rounds: list[RoundRecord] = list(records)
    assert len(policy.decisions) == len(rounds)
    return [
        (d.gamma, r.fused, r.num_drafted, r.num_accepted, r.num_committed)
        for d, r in zip(policy.decisions, rounds, strict=True)
    ]


def _trace_scenario(tmp_path: Path, seq: list[int], **sections: Any) -> Scenario:
    """One device replaying ``seq`` as the trace request's acceptance, one server."""
    trace = tmp_path / "trace.jsonl"
    row = {"request_id": "r", "arrival_ms": 0.0, "prompt_tokens": len(PROMPT),
           "output_tokens": MAX_NEW, "drafter_id": 0, "acceptance_seq": seq}  # fmt: skip
    trace.write_text(json.dumps(row) + "\n")
    data = {
        "seed": 1,
        "duration_s": 60.0,
        "auto_topology": {"devices": [{"count": 1}], "servers": [{"count": 1}]},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
        **sections,
    }
    return scenario_from_dict(data)


def _simulated_rounds(
    tmp_path: Path, seq: list[int], fused_rounds: str, window: Any
) -> list[Round]:
    """The simulator's rounds of the trace request, decided by ``window`` (an instance)."""
    sections = {"record_rounds": True, "fast_path": False, "fused_rounds": fused_rounds}
    scenario = _trace_scenario(tmp_path, seq, **sections)
    policy = Recorded(window)
    policies = dataclasses.replace(build_policies(scenario), window=policy)
    result = simulate(scenario, policies=policies)
    assert [r.num_output_tokens for r in result.requests] == [MAX_NEW]
    return _rounds(policy, result.rounds)


def _runtime_rounds(
    target: TransformersTarget, fused_rounds: str, window: Any, session_id: str
) -> list[Round]:
    """The runtime's rounds over loopback gRPC, ``window`` the device's and the server's
    (a ``cloud_only`` server has no draft: it needs none)."""
    policy = Recorded(window)
    cloud_only = fused_rounds == "cloud_only"
    server = start_server(
        target,
        draft_factory=None if cloud_only else NgramDrafter,
        window=policy,
        fused_rounds=fused_rounds,
    )
    try:
        result = generate(
            RemoteVerifier(f"127.0.0.1:{server.port}"),
            NgramDrafter(),
            PROMPT,
            SamplingParams(max_new_tokens=MAX_NEW),
            DraftOptions(session_id=session_id),
            policy,
        )
    finally:
        server.stop(grace_s=0)
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, MAX_NEW)
    return _rounds(policy, result.rounds)


def _check_cloud_only(rounds: list[Round]) -> None:
    """A cloud-only fused round sends nothing and commits the target's own token."""
    assert all((sent, acc, done) == (0, 0, 1) for _, fused, sent, acc, done in rounds if fused)


@pytest.mark.parametrize("fused_rounds", FUSED_ROUNDS)
@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_window_decisions_match_between_runtime_and_simulator(
    name: str, fused_rounds: str, target: TransformersTarget, tmp_path: Path
) -> None:
    seq = _acceptance_seq(target_greedy_decode(target, PROMPT, MAX_NEW))
    assert 0 < sum(seq) < len(seq)  # some rounds accept, some reject
    params = _params(name, tmp_path)
    session_id = f"parity-{name}-{fused_rounds}"
    runtime = _runtime_rounds(
        target, fused_rounds, build_policy("window", name, params), session_id
    )
    simulated = _simulated_rounds(tmp_path, seq, fused_rounds, build_policy("window", name, params))
    assert runtime == simulated
    if name == "dynamic":
        assert len({sent for _, _, sent, _, _ in runtime}) > 2  # the window really moved
    modes = [fused for _, fused, _, _, _ in runtime]
    if name == "awc":
        # it goes fused; colocated, it comes back as acceptance recovers; cloud-only rounds
        # measure no acceptance, so there it stays fused
        came_back = modes.index(True) < len(modes) - 1 - modes[::-1].index(False)
        assert came_back == (fused_rounds == "colocated")
    if fused_rounds == "cloud_only":
        _check_cloud_only(runtime)


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_each_window_policy_runs_on_the_handler_set_edgespec_sim_picks_for_it(
    name: str, target: TransformersTarget, tmp_path: Path
) -> None:
    """As ``edgespec sim`` runs it (built by name, ``fast_path`` on, no round records),
    which the runs above (``fast_path: false``) do not: a policy not declared to go fused
    (``may_fuse``, :func:`edgespec.policies.fusing.fusing`) takes the distributed-only
    ``fast`` set, which stops the run at a fused answer (``PolicyContractError``). On the
    same trace it must run to the end with the reference round's requests."""
    seq = _acceptance_seq(target_greedy_decode(target, PROMPT, MAX_NEW))
    params = _params(name, tmp_path)
    window = {"name": name, "params": params}
    fast, reference = (
        simulate(_trace_scenario(tmp_path, seq, policies={"window": window}, fast_path=on))
        for on in (True, False)
    )
    may_fuse = fusing(build_policy("window", name, params), "distributed")
    assert fast.path.startswith("inlined (" if may_fuse else "fast (")
    assert fast.requests == reference.requests
    assert [r.num_output_tokens for r in fast.requests] == [MAX_NEW]


SWITCHES = (False, True, True, True, False, False, True, False, True, True)


@pytest.mark.parametrize("fused_rounds", FUSED_ROUNDS)
def test_a_scripted_switch_pattern_runs_alike_in_both_hosts(
    fused_rounds: str, target: TransformersTarget, tmp_path: Path
) -> None:
    """D F F F D D F D F F, then distributed: fused runs of several rounds and of one,
    each handed back, on the same scripted decisions (fused γ 4, distributed γ 2)."""
    seq = _acceptance_seq(target_greedy_decode(target, PROMPT, MAX_NEW))
    session_id = f"switches-{fused_rounds}"
    runtime = _runtime_rounds(target, fused_rounds, ScriptedWindow(SWITCHES), session_id)
    assert runtime == _simulated_rounds(tmp_path, seq, fused_rounds, ScriptedWindow(SWITCHES))
    assert [fused for _, fused, _, _, _ in runtime[: len(SWITCHES)]] == list(SWITCHES)
    if fused_rounds == "cloud_only":
        _check_cloud_only(runtime)
