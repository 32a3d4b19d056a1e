"""Scenario validation at the edges of each range: the first value out is refused with a
message naming its field, the last value in is accepted."""

from __future__ import annotations

import pytest

from edgespec.config import ConfigError
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario

_LOSS_RANGE = (
    "must be in [0, 0.99] (each message is resent until it arrives, 1/(1 - loss_rate) "
    "attempts on average), got "
)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["duration_s=0"], "'duration_s': must be a finite number > 0, got 0.0"),
        (["duration_s=.inf"], "'duration_s': must be a finite number > 0, got inf"),
        (["seed=-1"], "'seed': must be >= 0, got -1"),
        (["top_k=-1"], "'top_k': must be a whole number in [0, 2**32) (0: every token), got -1"),
        (["top_p=0"], "'top_p': must be in (0, 1], got 0.0"),
        (["top_p=1.01"], "'top_p': must be in (0, 1], got 1.01"),
        (["min_p=1.5"], "'min_p': must be in [0, 1] (0: no cut), got 1.5"),
        (
            ["slo_classes.slow=0"],
            "'slo_classes.slow': must be a finite number > 0 or null, got 0.0",
        ),
        (
            ["slo_classes.slow=.inf"],
            "'slo_classes.slow': must be a finite number > 0 or null, got inf",
        ),
        (
            ["slo_classes.slow=9.9e-7"],
            "'slo_classes.slow': must be at least 1e-06 tok/s (a slower target's deadlines "
            "are not finite) or null, got 9.9e-07",
        ),
        (["links.wan.loss_rate=1.0"], f"'links.wan.loss_rate': {_LOSS_RANGE}1.0"),
        (["links.wan.loss_rate=0.991"], f"'links.wan.loss_rate': {_LOSS_RANGE}0.991"),
        (
            ["links.wan.retransmit_timeout_ms=-1"],
            "'links.wan.retransmit_timeout_ms': must be a finite number >= 0, got -1.0",
        ),
        (["links.wan.rtt_ms=.nan"], "'links.wan.rtt_ms': must be a finite number >= 0, got nan"),
        (["auto_topology.devices=[]"], "'auto_topology.devices': needs at least one device pool"),
        (["auto_topology.servers=[]"], "'auto_topology.servers': needs at least one server pool"),
        (
            ["auto_topology.servers.0.max_batch_size=0"],
            "'auto_topology.servers[0].max_batch_size': must be >= 1, got 0",
        ),
        (
            ["auto_topology.servers.0.max_batch_tokens=0"],
            "'auto_topology.servers[0].max_batch_tokens': must be >= 1, got 0",
        ),
        (
            ["auto_topology.devices.0.slo_mix={slow: 0, fast: 0}"],
            "'auto_topology.devices[0].slo_mix': needs at least one class with a positive share",
        ),
        (
            ["auto_topology.devices.0.slo_mix={slow: 2, fast: -1}"],
            "'auto_topology.devices[0].slo_mix.fast': must be a finite number >= 0, got -1.0",
        ),
        (
            ["auto_topology.devices.0.slo_mix={slow: 2, fast: .nan}"],
            "'auto_topology.devices[0].slo_mix.fast': must be a finite number >= 0, got nan",
        ),
        (["acceptance.alpha=-0.1"], "'acceptance.alpha': must be in [0, 1], got -0.1"),
        (
            ["workload.kind=poisson", "workload.rate_per_s=0"],
            "'workload.rate_per_s': must be a finite number > 0, got 0.0",
        ),
        (["workload.ramp_s=-1"], "'workload.ramp_s': must be a finite number >= 0, got -1.0"),
        (["workload.ramp_s=.inf"], "'workload.ramp_s': must be a finite number >= 0, got inf"),
        (
            ["workload.think_time_s=.nan"],
            "'workload.think_time_s': must be a finite number >= 0, got nan",
        ),
        (
            ["workload.arrivals_until_s=.inf"],
            "'workload.arrivals_until_s': must be a finite number >= 0, got inf",
        ),
        (["workload.think_cv=.nan"], "'workload.think_cv': must be a finite number > 0, got nan"),
        (
            ["workload.output_tokens=[30, 0, 50, 120]"],
            "'workload.output_tokens[1]': must be in [1, 2,147,483,647], got 0",
        ),
        (  # a prompt of no token: one the runtime refuses (it was simulated)
            ["workload.prompt_tokens=[30, 0, 50, 120]"],
            "'workload.prompt_tokens[1]': must be in [1, 2,147,483,647], got 0",
        ),
        (  # it crashed in the cost model ("int too large to convert to float")
            ["workload.prompt_tokens=[1" + "0" * 300 + "]", "workload.output_tokens=[1]"],
            "'workload.prompt_tokens[0]': must be in [1, 2,147,483,647], got 10000000000000000"
            "... (301 characters)",
        ),
        (
            ["workload.prompt_tokens=[2147483648]", "workload.output_tokens=[1]"],
            "'workload.prompt_tokens[0]': must be in [1, 2,147,483,647], got 2147483648",
        ),
        (  # it passed, then overflowed mid-run (cv**2)
            ["workload.think_distribution=lognormal", "workload.think_cv=1e200"],
            "'workload.think_cv': must be <= 100, got 1e+200",
        ),
        (["workload.max_output_tokens=0"], "'workload.max_output_tokens': must be >= 1, got 0"),
        (["workload.max_output_tokens=-3"], "'workload.max_output_tokens': must be >= 1, got -3"),
    ],
)
def test_the_first_value_out_of_range_is_refused(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(tiny_scenario(), overrides)
    assert str(info.value) == f"config field {message}"


def test_the_last_value_in_range_is_accepted() -> None:
    overrides = [
        "links.wan.rtt_ms=0",
        "links.wan.loss_rate=0",
        "auto_topology.devices.0.slo_mix={slow: 1, fast: 0}",
        "acceptance={kind: iid, alpha: 0}",
        "workload.ramp_s=0",
        "workload.think_time_s=0",
        "workload.prompt_tokens=[1, 1, 2, 3]",
        "workload.output_tokens=[1, 1, 1, 1]",
        "workload.max_output_tokens=1",
        "slo_classes.slow=1e-6",
        "top_p=1",
        "min_p=1",
        "top_k=4294967295",
    ]
    scenario = scenario_from_dict(tiny_scenario(), overrides)
    assert (scenario.top_p, scenario.min_p, scenario.top_k) == (1.0, 1.0, 2**32 - 1)
    assert scenario.slo_classes["slow"] == 1e-6
    assert scenario.workload.ramp_s == 0.0 and scenario.acceptance.alpha == 0.0
    assert scenario.workload.prompt_tokens == (1, 1, 2, 3)
    assert dict(scenario.auto_topology.devices[0].slo_mix) == {"slow": 1.0, "fast": 0.0}


def test_the_highest_loss_rate_is_accepted() -> None:
    scenario = scenario_from_dict(tiny_scenario(), ["links.wan.loss_rate=0.99"])
    assert scenario.links["wan"].loss_rate == 0.99
