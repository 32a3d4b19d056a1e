"""A fleet over its limit across several pools (edgespec.sim.setup.pools.check_fleet_size)
is refused naming the total against the limit, at ``auto_topology.<kind>``: it used to
blame the pool that passed the limit with the room the others left, so overriding pool 0
of the bundled default scenario blamed pool 1's count in default.yaml ("must be <= 10",
and "must be <= 0" once pool 0 held the whole limit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.config.scenario_files import default_scenario_path
from edgespec.metrics.types import SystemMetrics
from edgespec.sim.setup.pools import check_fleet_size
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sweeps.capacity import capacity_search

OVER = "over the limit of 1,000,000 devices in a scenario"


@pytest.mark.parametrize(
    ("count", "total"), [(999_990, "1,000,070 devices in all pools (999,990 + 80)"),
                         (1_000_000, "1,000,080 devices in all pools (1,000,000 + 80)")]
)  # fmt: skip
def test_an_override_over_the_limit_names_the_total_not_another_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int, total: str
) -> None:
    override = f"auto_topology.devices.0.count={count}"
    assert main(["sim", override, "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: config field 'auto_topology.devices': {total}, {OVER}\n"
    )
    assert not (tmp_path / "o").exists()


def test_a_file_over_the_limit_is_located_at_its_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = default_scenario_path().read_text().replace("count: 120", "count: 999999")
    path = tmp_path / "big.yaml"
    path.write_text(text)
    line = text.splitlines().index("  devices:") + 1
    assert main(["sim", str(path), "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {path}:{line}: config field 'auto_topology.devices': 1,000,079 "
        f"devices in all pools (999,999 + 80), {OVER}\n"
    )


def test_a_capacity_bound_over_the_limit_names_the_total() -> None:
    def never(scenario: dict[str, Any]) -> SystemMetrics:
        raise AssertionError("no probe may run")

    data = yaml.safe_load(default_scenario_path().read_text())
    with pytest.raises(ConfigError) as info:
        capacity_search(
            data,
            "auto_topology.devices.0.count",
            never,
            epsilon=0.05,
            lo=1,
            hi=999_990,
            progress=False,
            check=scenario_from_dict,
        )
    assert str(info.value) == (
        "config field 'auto_topology.devices': at hi=999990: 1,000,070 devices in all pools "
        f"(999,990 + 80), {OVER}"
    )


def test_many_pools_list_the_first_counts_and_how_many_more() -> None:
    with pytest.raises(ConfigError) as info:
        check_fleet_size("servers", [10_000] * 11, 100_000)
    assert str(info.value) == (
        "config field 'auto_topology.servers': 110,000 servers in all pools (10,000 + 10,000 "
        "+ 10,000 + 10,000 + 10,000 + 10,000 + 10,000 + 10,000 + 3 more pools), over the "
        "limit of 100,000 servers in a scenario"
    )
    check_fleet_size("servers", [10_000] * 10, 100_000)  # the limit itself is allowed
