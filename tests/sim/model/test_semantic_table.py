"""The simulator's reject-share table (edgespec/sim/model/semantic.py,
``verification.table``): read at the threshold and between the channels, refused at the
field when malformed or missing, and read per device at its own channel."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.policies.semantic.csi import ChannelState
from edgespec.sim.model.semantic import load_reject_table
from edgespec.sim.setup.build import build_run
from edgespec.sim.setup.resolve import resolve
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario

TABLE: dict[str, Any] = {
    "thresholds": list(range(17)),
    "channels": {"poor": {"uplink_mbps": 20, "per": 0.0, "rtt_ms": 50}, "good": {"quality": 0.9}},
    "reject_share": {
        "poor": [1.0 - t / 32 for t in range(17)],  # 0.625 at T = 12
        "good": [1.0 - t / 16 for t in range(17)],  # 0.25 at T = 12
    },
}


def _table_file(tmp_path: Path, data: dict[str, Any] = TABLE) -> Path:
    path = tmp_path / "head-acceptance.json"
    path.write_text(json.dumps(data))
    return path


def test_the_table_is_read_at_the_threshold_and_between_the_channels(tmp_path: Path) -> None:
    table = load_reject_table(str(_table_file(tmp_path)))
    poor_q = ChannelState(20e6, 0.0, 0.05).quality
    assert table.qualities[0] == pytest.approx(poor_q) and table.qualities[1] == 0.9
    assert table.share(poor_q, 12.0) == pytest.approx(0.625)
    assert table.share(0.9, 12.0) == pytest.approx(0.25)
    assert table.share(0.9, 12.5) == pytest.approx(1.0 - 12.5 / 16)  # between thresholds
    middle = (poor_q + 0.9) / 2
    assert table.share(middle, 12.0) == pytest.approx((0.625 + 0.25) / 2)
    assert table.share(0.0, 12.0) == pytest.approx(0.625)  # held outside the channels
    assert table.share(1.0, 12.0) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="outside the table"):
        replace(table, thresholds=tuple(float(t) for t in range(1, 18))).share(0.5, 0.5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"thresholds": [0, 1]}, "17 reject shares for 2 thresholds"),
        ({"channels": {"poor": {"quality": 0.9}, "good": {"quality": 0.4}}}, "not below"),
        ({"channels": {"poor": {"rate": 20}, "good": {"quality": 0.9}}}, "needs quality"),
        ({"reject_share": {"poor": [2.0] * 17, "good": [0.0] * 17}}, "must be in \\[0, 1\\]"),
        ({"reject_share": {"poor": [0.5] * 17}}, "missing or malformed 'good'"),
    ],
)
def test_a_malformed_table_is_refused_at_the_field(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = _table_file(tmp_path, {**TABLE, **change})
    with pytest.raises(ConfigError, match=message) as info:
        load_reject_table(str(path))
    assert info.value.path == "verification.table"


def test_a_missing_table_names_the_command_that_writes_it() -> None:
    scenario = scenario_from_dict(
        tiny_scenario(), ["verification={rule: semantic, table: no-such-head}"]
    )
    with pytest.raises(ConfigError, match="`edgespec train wisv` writes") as info:
        simulate(scenario)
    assert info.value.path == "verification.table"
    assert "no-such-head-acceptance.json does not exist" in str(info.value)


def test_each_device_reads_its_own_channel(tmp_path: Path) -> None:
    data = tiny_scenario()
    data["links"] = {
        "poor": {"rtt_ms": 50.0, "bandwidth_mbps": 20.0},
        "mid": {"rtt_ms": 5.0, "bandwidth_mbps": 100.0},
        "good": {"rtt_ms": 50.0, "bandwidth_mbps": 1000.0},
    }
    pool = data["auto_topology"]["devices"][0]
    data["auto_topology"]["devices"] = [
        {**pool, "name": link, "count": 1, "link": link} for link in ("poor", "mid", "good")
    ]
    data["verification"] = {"rule": "semantic", "table": str(_table_file(tmp_path))}
    poor, mid, good = (d.semantic for d in build_run(resolve(scenario_from_dict(data))).devices)
    assert poor is not None and mid is not None and good is not None
    assert poor.reject_share == pytest.approx(0.625)
    assert good.reject_share == pytest.approx(0.25)  # κ = 1 > 0.9: the good channel's
    kappa = ChannelState(100e6, 0.0, 0.005).quality
    w = (kappa - poor.quality) / (0.9 - poor.quality)
    assert mid.reject_share == pytest.approx(0.625 + w * (0.25 - 0.625))
    assert (poor.upload, mid.upload, good.upload) == ("fh", "sh", "fh")  # auto: RTT > 10 ms
    assert poor.hidden_values == 1024  # qwen3-0.6b's hidden size
