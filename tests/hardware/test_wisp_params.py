"""WISP batching's ``profile`` → Eq. 19 coefficients rule, in one place
(edgespec.hardware.wisp.wisp_batching_params): the simulator (scenario → build_policies)
and the server (edgespec.runtime.server.batching.build_batching) give the same coefficients or
the same error for every parameter set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError, PolicySpec
from edgespec.hardware.cost_models import load_wisp_coefficients
from edgespec.hardware.wisp import wisp_batching_params
from edgespec.policies.estimator import WispCoefficients
from edgespec.runtime.server.batching import build_batching
from edgespec.sim.setup.build import build_policies
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario

PROFILE = "a100-qwen3-32b"
FOUR = {"a_s": 0.5, "b_compute_s": 0.25, "b_read_s": 0.125, "c_s": 2.0}
ALL_FOUR = "give all four (a_s, b_compute_s, b_read_s, c_s), or a profile alone"


def _params(case: str, tmp_path: Path) -> dict[str, Any]:
    missing = str(tmp_path / "missing.yaml")
    cases: dict[str, dict[str, Any]] = {
        "profile only": {"profile": PROFILE},
        "profile and guard": {"profile": PROFILE, "guard_s": 0.01},
        "full coefficients": {**FOUR, "guard_s": 0.0},
        "profile and c_s": {"profile": PROFILE, "c_s": 0.5},
        "profile and all four": {"profile": PROFILE, **FOUR},
        "partial without profile": {"b_read_s": 0.1, "c_s": 0.01},
        "a_s without the rest": {"a_s": 0.1},
        "unknown profile": {"profile": "nope"},
        "profile of another kind": {"profile": "rtx4500-llama2-7b-zhu"},
        "missing profile file": {"profile": missing},
        "unknown parameter": {"profile": PROFILE, "delta": 1},
    }
    return cases[case]


def _expected(case: str, tmp_path: Path) -> tuple[WispCoefficients, float] | tuple[str, str]:
    """(coefficients, guard_s), or (field under the spec, message)."""
    table = load_wisp_coefficients(PROFILE)
    cases: dict[str, tuple[WispCoefficients, float] | tuple[str, str]] = {
        "profile only": (table, 0.005),
        "profile and guard": (table, 0.01),
        "full coefficients": (WispCoefficients(**FOUR), 0.0),
        "profile and c_s": ("params", f"wisp coefficient(s) c_s given without a_s: {ALL_FOUR}"),
        "profile and all four": (
            "params",
            f"wisp coefficient(s) a_s, b_compute_s, b_read_s, c_s given with a profile: {ALL_FOUR}",
        ),
        "partial without profile": (
            "params",
            f"wisp coefficient(s) b_read_s, c_s given without a_s: {ALL_FOUR}",
        ),
        "a_s without the rest": (
            "params",
            f"wisp coefficient(s) a_s given without b_compute_s: {ALL_FOUR}",
        ),
        "unknown profile": ("params.profile", "no hardware/profiles preset named 'nope'; known: "),
        "profile of another kind": (
            "params.profile",
            "'rtx4500-llama2-7b-zhu' is not a 'wisp' profile",
        ),
        "missing profile file": ("params.profile", f"{tmp_path / 'missing.yaml'}: file not found"),
        "unknown parameter": (
            "params",
            "batching policy 'wisp' has no parameter(s) ['delta']; known: ['a_s', "
            "'b_compute_s', 'b_read_s', 'c_s', 'guard_s', 'profile', 'work_conserving']",
        ),
    }
    return cases[case]


def _simulator(params: dict[str, Any]) -> Any:
    batching = json.dumps({"name": "wisp", "params": params})
    scenario = scenario_from_dict(tiny_scenario(), [f"policies.batching={batching}"])
    return build_policies(scenario).batching


def _outcome(build: Any, params: dict[str, Any], spec: str) -> tuple[Any, ...]:
    """(coefficients, guard_s) of the policy built, or (field under ``spec``, message)."""
    try:
        policy = build(params)
    except ConfigError as exc:
        assert exc.path.startswith(f"{spec}.")
        return exc.path.removeprefix(f"{spec}."), exc.message
    return policy.estimator, policy.guard_s


@pytest.mark.parametrize(
    "case",
    [
        "profile only",
        "profile and guard",
        "full coefficients",
        "profile and c_s",
        "profile and all four",
        "partial without profile",
        "a_s without the rest",
        "unknown profile",
        "profile of another kind",
        "missing profile file",
        "unknown parameter",
    ],
)
def test_both_hosts_read_wisp_params_alike(case: str, tmp_path: Path) -> None:
    params = _params(case, tmp_path)
    simulator = _outcome(_simulator, params, "policies.batching")
    server = _outcome(lambda p: build_batching(PolicySpec("wisp", p)), params, "batching")
    assert simulator == server
    expected = _expected(case, tmp_path)
    if isinstance(expected[0], str):
        assert simulator[0] == expected[0] and str(simulator[1]).startswith(str(expected[1]))
    else:
        assert simulator == expected


def test_the_simulator_falls_back_on_its_first_server_pools_wisp_profile() -> None:
    """The one host-specific input: without a profile or coefficients the simulator reads
    its first server pool's wisp cost-model profile; the server has no such fallback."""
    cost = f"auto_topology.servers.0.cost_model={{kind: wisp, profile: {PROFILE}}}"
    scenario = scenario_from_dict(tiny_scenario(), ["policies.batching.name=wisp", cost])
    policy: Any = build_policies(scenario).batching
    assert policy.estimator == load_wisp_coefficients(PROFILE)
    assert wisp_batching_params({"guard_s": 0.1}, PROFILE) == {
        "guard_s": 0.1,
        **{k: getattr(policy.estimator, k) for k in FOUR},
    }
    with pytest.raises(ConfigError) as error:
        build_batching(PolicySpec("wisp", {"guard_s": 0.1}))
    assert str(error.value).startswith(
        "config field 'batching.params.profile': wisp batching needs Eq. 19 coefficients: "
        "give a kind: wisp profile (--profile FILE_OR_NAME"
    )
