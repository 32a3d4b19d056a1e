"""Devices' uplinks on a wireless link (``links.NAME.wireless``, Zhu et al., seed 001,
§II-B): an equal OFDMA share of the cell's band for each of the n devices on the link in
the whole scenario, and a channel drawn once per device from its own stream (the
``(seed, "wireless")`` family, child = the device's index in the scenario), so a device's
rate does not depend on which cells of a pinned scenario run in this process."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from edgespec.config import ConfigError
from edgespec.core.wireless import draw_channels, rate_bps
from edgespec.sim.model.network import Link
from edgespec.sim.setup.pools import DeviceSpec
from edgespec.sim.setup.scenario import Scenario


def devices_per_link(all_devices: Sequence[DeviceSpec]) -> Counter[str]:
    """How many of the scenario's devices use each link."""
    return Counter(spec.pool.link for spec in all_devices)


def device_link(
    scenario: Scenario, spec: DeviceSpec, link: Link, global_index: int, counts: Counter[str]
) -> Link:
    """``link``, with the device's own uplink rate when its link is wireless; a rate of 0
    (a channel gain lost under the noise: ``path_loss_db: -4000``) is a ConfigError at
    the link's ``wireless``, naming the device."""
    cell = scenario.links[spec.pool.link].wireless
    if cell is None:
        return link
    seq = np.random.SeedSequence([scenario.seed, *b"wireless"], spawn_key=(global_index,))
    gain = draw_channels(cell, 1, np.random.Generator(np.random.PCG64(seq))).gains[0]
    rate = rate_bps(cell, 1.0 / counts[spec.pool.link], gain)
    if not rate > 0:
        raise ConfigError(
            f"links.{spec.pool.link}.wireless",
            f"device {global_index}'s uplink rate is {rate:g} bit/s (channel gain {gain:.3g}); "
            "every device needs a rate > 0",
        )
    return replace(link, uplink_bytes_per_s=rate / 8.0)
