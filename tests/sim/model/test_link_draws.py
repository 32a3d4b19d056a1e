"""Link.latency_s and uplink_latency_s draw by draw: RTT/2 + bytes / rate, the jitter
from the next uniform by inversion, then one uniform per transmission until one is not
lost (each lost one a retransmission timeout), in that order (the fast path inlines it)."""

from __future__ import annotations

import math

import numpy as np

from edgespec.sim.model.network import Link
from edgespec.sim.model.rng import UniformStream


def _expected(link: Link, size: int, rate: float, draws: UniformStream) -> float:
    delay = 0.5 * link.rtt_s + size / rate
    if link.jitter_s > 0:
        delay += -link.jitter_s * math.log(1.0 - draws.next())
    if link.loss_rate > 0:
        while draws.next() < link.loss_rate:
            delay += link.retransmit_timeout_s
    return delay


def _streams() -> tuple[UniformStream, UniformStream]:
    return (
        UniformStream(np.random.default_rng(5), 16),
        UniformStream(np.random.default_rng(5), 16),
    )


def test_both_directions_draw_in_order_with_jitter_and_loss() -> None:
    link = Link(0.02, 0.003, 1e6, 0.4, 0.2, uplink_bytes_per_s=2.5e5)
    rng, draws = _streams()
    for size in range(0, 4000, 37):  # several refills of a 16-draw block
        assert link.latency_s(size, rng) == _expected(link, size, 1e6, draws)
        assert link.uplink_latency_s(size, rng) == _expected(link, size, 2.5e5, draws)
    assert rng.index == draws.index  # no draw more, none less


def test_no_jitter_no_loss_draws_nothing() -> None:
    link = Link(0.02, 0.0, 1e6, 0.0, 0.2)
    rng, _ = _streams()
    assert link.latency_s(100, rng) == 0.01 + 100 / 1e6
    assert link.uplink_latency_s(100, rng) == 0.01 + 100 / 1e6  # the bandwidth both ways
    assert rng.index == 16  # still empty: nothing drawn
