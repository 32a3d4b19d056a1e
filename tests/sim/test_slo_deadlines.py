"""The simulator's WISP inputs: per-round token-speed deadlines rebuilt by hand from the
round records, and SLED's server without a prefix cache."""

from __future__ import annotations

import math
from typing import Any

from edgespec.core.types import RoundRecord
from edgespec.policies.slo import acceptance_estimate
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def test_token_speed_deadlines_follow_eq_6_round_by_round() -> None:
    data = tiny_scenario()
    run = simulate(scenario_from_dict(data, ["deadline_rule=token_speed", "record_rounds=true"]))
    targets = data["slo_classes"]
    classes = {r.request_id: r.slo_class for r in run.requests}
    by_request: dict[str, list[RoundRecord]] = {}
    for r in run.rounds:
        by_request.setdefault(r.request_id, []).append(r)
    checked = 0
    for rid, rounds in by_request.items():
        if rid not in classes:
            continue  # unfinished: its class is not in the records
        drafted = accepted = 0
        network = 0.0
        for r in sorted(rounds, key=lambda r: r.round_index):
            arrival = r.start_s + r.draft_s + r.uplink_s
            alpha = acceptance_estimate(drafted, accepted)
            expected = arrival + alpha * r.num_drafted / targets[classes[rid]] - r.draft_s - network
            assert r.deadline_s is not None and math.isclose(r.deadline_s, expected, abs_tol=1e-9)
            drafted += r.num_drafted
            accepted += r.num_accepted
            network = r.uplink_s + r.downlink_s
            checked += 1
    assert checked > 100


def test_pace_deadlines_and_best_effort() -> None:
    data = tiny_scenario()
    data["slo_classes"] = {"slow": 2.0, "fast": None}
    run = simulate(scenario_from_dict(data, ["record_rounds=true"]))
    arrivals = {r.request_id: r.arrival_s for r in run.requests}
    classes = {r.request_id: r.slo_class for r in run.requests}
    committed: dict[str, int] = {}
    for r in sorted(run.rounds, key=lambda r: (r.request_id, r.round_index)):
        if r.request_id not in classes:
            continue
        done = committed.get(r.request_id, 0)
        if classes[r.request_id] == "fast":
            assert r.deadline_s is None
        else:
            assert r.deadline_s == arrivals[r.request_id] + (done + 1) / 2.0
        committed[r.request_id] = done + r.num_committed


def test_sled_server_recomputes_the_whole_prefix() -> None:
    data = tiny_scenario()
    off = simulate(scenario_from_dict(data, ["auto_topology.servers.0.prefix_cache=false"]))
    on = simulate(scenario_from_dict(data))
    assert all(b.num_cached_tokens == 0 for b in off.batches)
    assert sum(b.num_new_tokens for b in off.batches) > 3 * sum(
        b.num_new_tokens for b in on.batches
    )
    assert "a server has no prefix cache" in off.path
    # every verification forwards the session's whole context: prompt + committed + draft
    one = [
        "auto_topology.devices.0.count=1",
        "auto_topology.servers.0.count=1",
        "auto_topology.servers.0.prefix_cache=false",
        "record_rounds=true",
    ]
    single = simulate(scenario_from_dict(data, one))
    prompt = single.requests[0].num_prompt_tokens
    done = 0
    for r, b in zip(single.rounds, single.batches, strict=False):
        if r.request_id != single.requests[0].request_id:
            break
        assert (b.batch_size, b.num_new_tokens) == (1, prompt + done + r.num_drafted)
        done += r.num_committed


def test_wisp_batching_needs_a_wisp_estimator() -> None:
    import pytest

    from edgespec.config import ConfigError
    from edgespec.sim.setup.build import build_policies

    def policies(batching: dict[str, Any], servers: dict[str, Any] | None = None) -> object:
        data: dict[str, Any] = {"policies": {"batching": batching}}
        if servers is not None:
            data["auto_topology"] = {"servers": [servers]}
        return build_policies(scenario_from_dict(data)).batching

    with pytest.raises(
        ConfigError,
        match="'policies.batching.params.profile': wisp batching needs Eq. 19 coefficients",
    ):
        policies({"name": "wisp"})
    with pytest.raises(ConfigError, match="'generic-cpu-gemma3-270m' is not a 'wisp' profile"):
        policies({"name": "wisp", "params": {"profile": "generic-cpu-gemma3-270m"}})
    own = {"cost_model": {"kind": "wisp", "profile": "a100-qwen3-32b"}}
    assert policies({"name": "wisp"}, own).estimator.c_s == 0.01486  # type: ignore[attr-defined]
