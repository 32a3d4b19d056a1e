"""A wireless link in the simulator (``links.NAME.wireless``): each device's uplink rate
is its equal OFDMA share of the band times its own channel's spectral efficiency."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgespec.config import ConfigError
from edgespec.core.wireless import WirelessCell, draw_channels
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario
from tests.sim.parts import build_entities

WIRELESS = ["links.wan.wireless={bandwidth_hz: 2000000.0, radius_m: 400.0}"]


def test_each_device_gets_its_share_times_its_channel() -> None:
    scenario = scenario_from_dict(tiny_scenario(), WIRELESS)
    devices, _ = build_entities(scenario)
    cell = WirelessCell(bandwidth_hz=2.0e6, radius_m=400.0)
    n = len(devices)
    for i, dev in enumerate(devices):
        seq = np.random.SeedSequence([scenario.seed, *b"wireless"], spawn_key=(i,))
        gain = draw_channels(cell, 1, np.random.Generator(np.random.PCG64(seq))).gains[0]
        rate = (1.0 / n) * 2.0e6 * math.log2(1.0 + 0.2 * gain / cell.noise_w)
        assert dev.link.up_bytes_per_s == pytest.approx(rate / 8.0, rel=1e-12)
        # The downlink keeps the link's bandwidth.
        assert dev.link.bandwidth_bytes_per_s == scenario.links["wan"].bandwidth_mbps * 1e6 / 8
    rates = {dev.link.up_bytes_per_s for dev in devices}
    assert len(rates) == n  # every device its own channel


def test_a_poor_cell_slows_the_requests() -> None:
    wired = simulate(scenario_from_dict(tiny_scenario(), ["record_rounds=true"]))
    poor_cell = ["links.wan.wireless={bandwidth_hz: 200000.0, path_loss_db: -80.0}"]
    poor = simulate(scenario_from_dict(tiny_scenario(), [*poor_cell, "record_rounds=true"]))
    assert len(poor.requests) > 0 and len(poor.rounds) > 0
    wired_up = np.mean([r.uplink_s for r in wired.rounds])
    poor_up = np.mean([r.uplink_s for r in poor.rounds])
    wired_down = np.mean([r.downlink_s for r in wired.rounds])
    poor_down = np.mean([r.downlink_s for r in poor.rounds])
    assert poor_up > 2 * wired_up
    assert poor_down == pytest.approx(wired_down, rel=0.05)  # the downlink is unchanged


def test_bad_wireless_settings_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"links\.wan\.wireless"):
        scenario_from_dict(tiny_scenario(), ["links.wan.wireless={radius_m: 5.0}"])
    with pytest.raises(ConfigError, match=r"links\.wan\.wireless\.bandwidth_mhz.*unknown field"):
        scenario_from_dict(tiny_scenario(), ["links.wan.wireless={bandwidth_mhz: 20}"])
