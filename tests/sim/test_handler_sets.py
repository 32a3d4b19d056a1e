"""The contract of the handler sets: every set that takes a run produces records
identical to the reference round's, on every scenario family the simulator's tests use;
a set that cannot take a run says why, and only for the reasons it declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.config import apply_overrides
from edgespec.errors import UserInputError
from edgespec.policies import registry
from edgespec.sim.handler_sets import HANDLER_SETS
from edgespec.sim.setup.scenario import PoliciesConfig, scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.fast.test_fast_path import CASES as FAST_PATH_CASES
from tests.sim.helpers import hand_trace_scenario, tiny_scenario
from tests.sim.test_fused_switching import _Switching
from tests.sim.test_policy_path import CASES as POLICY_PATH_CASES
from tests.sim.test_policy_path import SPECIALISED_CASES, _DepthWindow
from tests.sim.test_stop_predictor import features
from tests.sim.test_stop_predictor import scenario as stop_scenario
from tests.sim.test_tree_trace_modes import ROW as TREE_ROW

SEMANTIC_CASES: dict[str, list[str]] = {
    "fh-iid": ["verification={rule: semantic, reject_share: 0.4, upload: fh}"],
    "sh-trace": [
        "acceptance={kind: trace, traces: [TRACE]}",
        "verification={rule: semantic, reject_share: 0.3, upload: sh}",
    ],
    "auto-decay-dynamic": [
        "acceptance.kind=decay",
        "policies.window.name=dynamic",
        "verification={rule: semantic, reject_share: 0.5, draft_hidden: 256}",
    ],
    "sh-awc-fused": [  # AWC goes fused on these links: fused rounds judge mismatches too
        "policies.window.name=awc",
        "verification={rule: semantic, reject_share: 0.2, upload: sh}",
    ],
    "wireless-sh": [
        "links.wan.wireless={bandwidth_hz: 2000000.0, path_loss_db: -60.0}",
        "verification={rule: semantic, reject_share: 0.6, upload: sh}",
    ],
}
"""Semantic verification (edgespec/sim/model/semantic.py): the inbound sets refuse it."""

TINY_FAMILIES: dict[str, list[str]] = {
    **{f"fast-path/{k}": v for k, v in FAST_PATH_CASES.items()},
    **{f"policy-path/{k}": v for k, v in POLICY_PATH_CASES.items()},
    **{f"specialised/{k}": v for k, v in SPECIALISED_CASES.items()},
    "switching": ["policies.window.name=switching"],
    "awc": ["policies.window.name=awc"],
    "wireless": ["links.wan.wireless={bandwidth_hz: 2000000.0, path_loss_db: -60.0}"],
    "sampled/dense": ["temperature=0.8"],
    "sampled/compact": ["temperature=0.8", "draft_probs=compact"],
    "sampled/compact-top-k": ["temperature=0.8", "draft_probs=compact", "top_k=40"],
    "sampled/redrawn": [
        "temperature=0.8",
        "acceptance={kind: trace, traces: [SAMPLED], sampled_draws: redrawn}",
    ],
    **{f"semantic/{k}": v for k, v in SEMANTIC_CASES.items()},
    "padded/fcfs": ["auto_topology.servers.0.batch_pricing=padded"],
    "padded/lab-dynamic": [
        "auto_topology.servers.0.batch_pricing=padded",
        "policies.batching={name: lab, params: {max_length_ratio: 1.5}}",
        "policies.window.name=dynamic",
    ],
    "padded/fused": ["auto_topology.servers.0.batch_pricing=padded", "mode=fused"],
    "prefill-parts/distributed": ["auto_topology.servers.0.prefill_part_tokens=32"],
    "prefill-parts/fused": ["auto_topology.servers.0.prefill_part_tokens=32", "mode=fused"],
    "prefill-parts/sled": [
        "auto_topology.servers.0.prefill_part_tokens=32",
        "auto_topology.servers.0.prefix_cache=false",
    ],
}
"""Families over tests/sim/helpers.tiny_scenario (12 devices, 2 servers, 20 s)."""


def _named(kind: str, families: dict[str, list[str]]) -> set[str]:
    """The ``kind`` policies the families run, by name (a family naming none: the default)."""
    default = getattr(PoliciesConfig(), kind).name
    return {
        apply_overrides(tiny_scenario(), overrides)["policies"].get(kind, {}).get("name", default)
        for overrides in families.values()
    }


REGISTERED_FAMILIES: dict[str, list[str]] = {
    f"registered/{kind}-{name}": [f"policies.{kind}.name={name}"]
    for kind in ("window", "batching")
    for name in sorted(set(registry.KINDS[kind]) - _named(kind, TINY_FAMILIES))
}
"""Each registered window and batching policy no family above names, with its default
params: a new policy runs on every handler set the day it is registered (one that needs
params, or a scenario to show what it does, gets a family of its own above)."""
FAMILIES = {**TINY_FAMILIES, **REGISTERED_FAMILIES}

STOP_ROWS = [
    {"request_id": f"r{i}", "arrival_ms": 40.0 * i, "prompt_tokens": 4, "output_tokens": 9,
     "drafter_id": i % 2, "acceptance_seq": [1, 1, 1, 0, 1, 1, 0, 1, 1],
     "draft_features": features([0.9, 0.9, 0.2, 0.9, 0.9, 0.9, 0.3, 0.9, 0.9])}
    for i in range(6)
]  # fmt: skip


def _hand_family(name: str, tmp_path: Path) -> dict[str, Any]:
    if name == "stop-predictor":
        return stop_scenario(tmp_path, STOP_ROWS)
    data = hand_trace_scenario(tmp_path, [TREE_ROW], gamma=3, duration_s=5.0)
    if name == "token-tree-fused":
        data["mode"] = "fused"
    return data


HAND_FAMILIES = ["stop-predictor", "token-tree", "token-tree-fused"]


def _run(data: dict[str, Any], overrides: list[str], handlers: str) -> SimResult | str:
    try:
        return simulate(scenario_from_dict(data, overrides), handlers=handlers)
    except UserInputError as exc:
        return str(exc)


_REFERENCES: dict[tuple[str, bool], SimResult | str] = {}
"""The reference round's result per tiny family and record_rounds, run once for every set."""


def _reference(
    data: dict[str, Any], overrides: list[str], key: tuple[str, bool] | None
) -> SimResult | str:
    if key is None:
        return _run(data, overrides, "reference")
    if key not in _REFERENCES:
        _REFERENCES[key] = _run(data, overrides, "reference")
    return _REFERENCES[key]


def _check_against_reference(
    data: dict[str, Any], overrides: list[str], name: str, key: tuple[str, bool] | None = None
) -> None:
    reference = _reference(data, overrides, key)
    assert isinstance(reference, SimResult) and reference.num_rounds > 0
    result = _run(data, overrides, name)
    if isinstance(result, str):  # refused: only the specialised sets, with their reasons
        assert name in ("inlined", "inbound", "fast"), result
        assert result.startswith(f"handler set {name!r} cannot run this scenario: ")
        return
    assert result.path == f"{name} (asked for)"
    assert result.num_rounds == reference.num_rounds
    assert result.requests == reference.requests
    assert result.batches == reference.batches
    assert result.rounds == reference.rounds
    assert result.num_committed_tokens == reference.num_committed_tokens
    if reference.rounds:  # the count a run without round records gives is the rounds' sum
        assert reference.num_committed_tokens == sum(r.num_committed for r in reference.rounds)


@pytest.mark.parametrize("rounds", [True, False])
@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("name", sorted(set(HANDLER_SETS) - {"reference"}))
def test_every_handler_set_gives_the_reference_records(
    name: str, family: str, rounds: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry.WINDOW, "switching", _Switching)
    monkeypatch.setitem(registry.WINDOW, "depth", _DepthWindow)
    trace = Path(__file__).with_name("acceptance_trace.jsonl")
    sampled = Path(__file__).with_name("sampled_acceptance_trace.jsonl")  # with α
    overrides = [
        o.replace("TRACE", str(trace)).replace("SAMPLED", str(sampled)) for o in FAMILIES[family]
    ]
    overrides.append(f"record_rounds={rounds}".lower())
    _check_against_reference(tiny_scenario(), overrides, name, key=(family, rounds))


@pytest.mark.parametrize("rounds", [True, False])
@pytest.mark.parametrize("family", HAND_FAMILIES)
@pytest.mark.parametrize("name", sorted(set(HANDLER_SETS) - {"reference"}))
def test_every_handler_set_gives_the_reference_records_on_hand_traces(
    name: str, family: str, rounds: bool, tmp_path: Path
) -> None:
    data = _hand_family(family, tmp_path)
    _check_against_reference(data, [f"record_rounds={rounds}".lower()], name)


def test_the_fast_set_takes_the_plain_distributed_families() -> None:
    """The contract is not met by refusing: the inbound sets do run these families."""
    for family in ("fast-path/fcfs-static-iid", "specialised/wisp-token-speed"):
        for name in ("inbound", "fast"):
            overrides = [*TINY_FAMILIES[family], "record_rounds=false"]
            assert isinstance(_run(tiny_scenario(), overrides, name), SimResult)
