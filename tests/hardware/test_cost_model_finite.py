"""Fitted and measured cost-model coefficients are finite: NaN passes a ``< 0`` check and
inf prices every batch at inf, so both are refused at load, naming the coefficient."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from edgespec.config import ConfigError
from edgespec.hardware.cost_models import LookupCost, ZhuCost, load_profile
from edgespec.policies.estimator import WispCoefficients
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.hardware.test_cost_models_exact import TINY
from tests.sim.helpers import tiny_scenario

WISP = {"kind": "wisp", "a_s": 0.001, "b_compute_s": 0.0, "b_read_s": 0.0001, "c_s": 0.005}


@pytest.mark.parametrize("name", ["a_s", "b_compute_s", "b_read_s", "c_s"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_wisp_coefficients_must_be_finite(name: str, value: float) -> None:
    fields = {"a_s": 0.001, "b_compute_s": 0.0, "b_read_s": 0.0001, "c_s": 0.005, name: value}
    with pytest.raises(ValueError, match=f"^{name} must be finite and >= 0, got {value}$"):
        WispCoefficients(**fields)


@pytest.mark.parametrize(
    ("times", "per_cached", "message"),
    [
        ((1.0, math.nan), 0.0, "time_s[1] must be finite and > 0, got nan"),
        ((math.inf, 2.0), 0.0, "time_s[0] must be finite and > 0, got inf"),
        ((-1.0, 2.0), 0.0, "time_s[0] must be finite and > 0, got -1.0"),
        ((1.0, 2.0), math.nan, "per_cached_token_s must be finite and >= 0, got nan"),
        ((0.0, 2.0), 0.0, "time_s[0] must be finite and > 0, got 0.0"),  # a pass of no time
    ],
)
def test_lookup_times_must_be_finite(
    times: tuple[float, ...], per_cached: float, message: str
) -> None:
    with pytest.raises(ValueError) as info:
        LookupCost((1, 2), times, per_cached_token_s=per_cached)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("c1", "c2", "bad"), [(math.nan, 0.1, "c1_s_per_flop"), (1e-12, math.inf, "c2_s")]
)
def test_zhu_cost_coefficients_must_be_finite(c1: float, c2: float, bad: str) -> None:
    value = c1 if bad == "c1_s_per_flop" else c2
    with pytest.raises(ValueError, match=f"^{bad} must be finite and >= 0, got {value}$"):
        ZhuCost(TINY, c1, c2)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({**WISP, "c_s": math.nan}, "c_s: must be finite and >= 0, got nan"),
        ({**WISP, "a_s": math.inf}, "a_s: must be finite and >= 0, got inf"),
        (
            {"kind": "zhu", "model": "llama2-7b", "c1_s_per_flop": math.nan, "c2_s": 0.002},
            "c1_s_per_flop: must be finite and >= 0, got nan",
        ),
        (
            {"kind": "lookup", "num_linear": [1, 2], "time_s": [0.1, math.inf]},
            "time_s[1]: must be finite and >= 0, got inf",
        ),
    ],
)
def test_a_profile_file_with_a_non_finite_coefficient_is_refused(
    tmp_path: Path, data: dict[str, object], message: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_profile(str(path))
    field, detail = message.split(": ", 1)
    assert str(info.value) == f"config field '{path}.{field}': {detail}"


def test_the_sim_reports_a_nan_profile_at_the_field_that_named_it(tmp_path: Path) -> None:
    path = tmp_path / "nan.yaml"
    path.write_text(
        "kind: wisp\na_s: 3.3e-05\nb_compute_s: 3.4e-08\nb_read_s: 4.6e-06\nc_s: .nan\n"
    )
    overrides = [f"auto_topology.servers.0.cost_model={{kind: wisp, profile: '{path}'}}"]
    with pytest.raises(ConfigError) as info:
        simulate(scenario_from_dict(tiny_scenario(duration_s=0.5), overrides))
    assert str(info.value) == (
        "config field 'auto_topology.servers[0].cost_model.profile': "
        f"{path}.c_s: must be finite and >= 0, got nan"
    )


def test_a_cost_model_whose_passes_take_no_time_is_refused(tmp_path: Path) -> None:
    """Passes of no time (a lookup table of zeros, Eq. 17 all 0) with a link and
    think time of 0 left simulated time standing: a 1 s run never ended, its records
    growing ~3 MB/s (found by a report-only audit)."""
    path = tmp_path / "zhu0.yaml"
    path.write_text(yaml.safe_dump({"kind": "zhu", "model": "llama2-7b", "c1_s_per_flop": 0.0,
                                    "c2_s": 0.0}))  # fmt: skip
    with pytest.raises(ConfigError, match="c1_s_per_flop and c2_s are both 0: a pass would take"):
        load_profile(str(path))
    path = tmp_path / "zero.yaml"
    path.write_text(yaml.safe_dump({"kind": "lookup", "num_linear": [1, 2], "time_s": [0, 0]}))
    overrides = [f"auto_topology.{side}.0.cost_model={{kind: lookup, profile: '{path}'}}"
                 for side in ("servers", "devices")] + [
        "links.wan={rtt_ms: 0, jitter_ms: 0, loss_rate: 0, bandwidth_mbps: 1e12}",
        "workload.think_time_s=0", "workload.ramp_s=0"]  # fmt: skip
    with pytest.raises(ConfigError) as info:
        simulate(scenario_from_dict(tiny_scenario(duration_s=1.0), overrides))
    assert str(info.value) == (
        "config field 'auto_topology.devices[0].cost_model.profile': time_s[0] must be finite "
        "and > 0, got 0.0"
    )
