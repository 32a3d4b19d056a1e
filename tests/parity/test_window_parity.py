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

AWC runs a hand-built WC-DNN (:func:`tests.parity.window_recording.load_sensitive_wc_dnn`)
whose acceptance unit, with this prompt's acceptance (three rejections, then every position
accepted), goes fused after the rejections and back to distributed as acceptance recovers,
and whose load unit reads queue depth, RTT and TPOT: silent at the values both hosts
measure, it sends γ to 1 (then fused) on a misreported one.

Both fused-rounds settings run: ``colocated`` (the scenario's default; the runtime server
has the n-gram draft) and ``cloud_only`` (``fused_rounds: cloud_only`` in the scenario,
``fused_rounds="cloud_only"`` in the server's config, no draft on the server: a fused round
sends nothing and commits the target's own token). Each host's policy object is wrapped
to record its observations and decisions: both hosts must show the same observations (field
by field; RTT and TPOT are each host's clock: RTT must be the host's own last round's
network time), make the same decisions and record the same rounds (γ, sent, accepted,
committed, fused).
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
from edgespec.policies.interfaces import WindowObservation
from edgespec.policies.registry import WINDOW, build_policy
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.sim.setup.build import build_policies
from edgespec.sim.setup.scenario import Scenario, scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.parity.window_recording import (
    Recorded,
    assert_rtt_is_the_rounds_network,
    assert_same_observations,
    load_sensitive_wc_dnn,
)
from tests.runtime.conftest import start_server
from tests.runtime.fused_helpers import ScriptedWindow

PROMPT = (7, 3, 9, 7, 3, 9, 7, 3, 12, 40, 7, 3, 9, 7)
FUSED_ROUNDS = ("colocated", "cloud_only")
Round = tuple[int, bool, int, int, int]  # γ, fused, sent, accepted, committed
Run = tuple[list[Round], list[WindowObservation]]  # the rounds, the observations before them
MAX_NEW = 40
WINDOWS: dict[str, dict[str, Any]] = {
    "static": {"gamma": 3},
    "dynamic": {"initial_gamma": 2, "min_gamma": 1, "max_gamma": 6},
    "awc": {"fused_gamma": 3},  # + "file": the hand-built weights, written per test
}


def _params(name: str, tmp_path: Path) -> dict[str, Any]:
    if name != "awc":
        return WINDOWS[name]
    weights = tmp_path / "wc-dnn.json"
    weights.write_text(json.dumps(load_sensitive_wc_dnn().to_json()))
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


def _rounds(policy: Recorded, records: Any) -> Run:
    """Each round with the decision it ran with (one decision per round), and the
    observations the decisions were made on, their RTT the host's own rounds' network."""
    rounds: list[RoundRecord] = list(records)
    assert len(policy.decisions) == len(rounds)
    assert_rtt_is_the_rounds_network(policy.observations, rounds)
    return [
        (d.gamma, r.fused, r.num_drafted, r.num_accepted, r.num_committed)
        for d, r in zip(policy.decisions, rounds, strict=True)
    ], policy.observations


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


def _simulated_rounds(tmp_path: Path, seq: list[int], fused_rounds: str, window: Any) -> Run:
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
) -> Run:
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
    runtime, seen = _runtime_rounds(
        target, fused_rounds, build_policy("window", name, params), session_id
    )
    window = build_policy("window", name, params)
    simulated, simulated_seen = _simulated_rounds(tmp_path, seq, fused_rounds, window)
    assert_same_observations(seen, simulated_seen)
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
    runtime, seen = _runtime_rounds(target, fused_rounds, ScriptedWindow(SWITCHES), session_id)
    simulated, simulated_seen = _simulated_rounds(
        tmp_path, seq, fused_rounds, ScriptedWindow(SWITCHES)
    )
    assert_same_observations(seen, simulated_seen)
    assert runtime == simulated
    assert [fused for _, fused, _, _, _ in runtime[: len(SWITCHES)]] == list(SWITCHES)
    if fused_rounds == "cloud_only":
        _check_cloud_only(runtime)
