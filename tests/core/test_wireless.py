"""The OFDMA uplink model (Zhu et al. Eqs. 15–16, §II-B) on hand-computed numbers, its
user-position and fading draws against their analytic moments, and its input checks."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from edgespec.core.wireless import (
    ChannelDraw,
    WirelessCell,
    channel_gain,
    draw_channels,
    rate_bps,
    snr,
    snr_db,
    spectral_efficiency,
    upload_time_s,
)

CELL = WirelessCell()  # Table II: 400 m, 20 MHz, −106 dBm, 0.2 W; g0 = −60 dB
# A user 100 m away with unit fading: g = 1e-6·1·100^-2 = 1e-10. σ² = 10^(−136/10) W, so
# p·g/σ² = 0.2·1e-10·10^13.6 = 200·10^0.6 = 796.214 (29.0103 dB).
GAIN_100M = 1e-10
SNR_100M = 200 * 10**0.6


def test_cell_defaults_in_linear_units() -> None:
    assert CELL.noise_w == pytest.approx(2.5118864e-14, rel=1e-7)
    assert CELL.path_loss_gain == pytest.approx(1e-6)
    assert WirelessCell(path_loss_db=-30.0).path_loss_gain == pytest.approx(1e-3)


def test_gain_snr_and_rate_by_hand() -> None:
    assert channel_gain(CELL, 100.0, 1.0) == pytest.approx(GAIN_100M)
    assert channel_gain(CELL, 200.0, 2.0) == pytest.approx(1e-6 * 2 / 40_000)
    assert snr(CELL, GAIN_100M) == pytest.approx(796.2143, rel=1e-6)
    assert snr_db(CELL, GAIN_100M) == pytest.approx(-6.9897 - 100 + 136, abs=1e-4)
    assert spectral_efficiency(CELL, GAIN_100M) == pytest.approx(math.log2(1 + SNR_100M))
    assert spectral_efficiency(CELL, GAIN_100M) == pytest.approx(9.638824, rel=1e-6)
    # half of 20 MHz: 1e7 Hz · 9.638824 bits/s/Hz
    assert rate_bps(CELL, 0.5, GAIN_100M) == pytest.approx(9.638824e7, rel=1e-6)
    assert rate_bps(CELL, 1.0, 0.0) == 0.0  # no channel, no rate


def test_the_minus_30_db_reading_of_g0_is_30_db_more_snr() -> None:
    cell = WirelessCell(path_loss_db=-30.0)
    gain = channel_gain(cell, 100.0, 1.0)
    assert gain == pytest.approx(1e-7)
    assert snr(cell, gain) == pytest.approx(SNR_100M * 1000)
    assert snr_db(cell, gain) == pytest.approx(snr_db(CELL, GAIN_100M) + 30)


def test_upload_time_of_a_prompt() -> None:
    # Eq. 15: λ = 16·(2048 + 4096) bits per token (1.1B draft, 7B verifier), 512 tokens
    bits = 16 * (2048 + 4096) * 512
    assert bits == 50_331_648
    rate = rate_bps(CELL, 0.5, GAIN_100M)
    assert upload_time_s(bits, rate) == pytest.approx(50_331_648 / 9.638824e7, rel=1e-6)
    assert upload_time_s(bits, rate) == pytest.approx(0.522176, rel=1e-5)
    assert upload_time_s(0, rate) == 0.0


def test_distances_are_uniform_by_area_in_the_annulus() -> None:
    draw = draw_channels(CELL, 20_000, np.random.default_rng(7))
    d = np.array(draw.distances_m)
    assert draw.num_users == 20_000
    assert d.min() >= 10.0 and d.max() <= 400.0
    # E[d] = (2/3)(R³ − a³)/(R² − a²) = 266.83 m (uniform in distance would be 205 m);
    # sd(d) ≈ 94.1 m, so the mean of 20k draws has a standard error of 0.67 m
    assert d.mean() == pytest.approx(266.829, abs=3.0)
    # P(d ≤ 200) = (200² − 10²)/(400² − 10²) = 0.2495 (standard error 0.003)
    assert np.mean(d <= 200.0) == pytest.approx(0.24953, abs=0.012)


def test_fading_is_unit_mean_exponential_and_gains_follow() -> None:
    draw = draw_channels(CELL, 20_000, np.random.default_rng(11))
    fading = np.array(draw.fading)
    assert fading.min() >= 0.0
    assert fading.mean() == pytest.approx(1.0, abs=0.03)  # standard error 0.007
    assert np.mean(fading > 1.0) == pytest.approx(math.exp(-1), abs=0.015)
    expected = 1e-6 * fading / np.array(draw.distances_m) ** 2
    assert np.array(draw.gains) == pytest.approx(expected, rel=1e-12)


def test_same_seed_same_draw_and_another_seed_another() -> None:
    first = draw_channels(CELL, 5, np.random.default_rng(3))
    assert first == draw_channels(CELL, 5, np.random.default_rng(3))
    assert first != draw_channels(CELL, 5, np.random.default_rng(4))
    assert draw_channels(CELL, 0, np.random.default_rng(3)) == ChannelDraw((), (), ())


def test_a_zero_minimum_distance_still_gives_positive_distances() -> None:
    draw = draw_channels(WirelessCell(min_distance_m=0.0), 1000, np.random.default_rng(5))
    assert min(draw.distances_m) > 0.0
    assert all(math.isfinite(g) for g in draw.gains)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"radius_m": 10.0}, "radius_m must be > min_distance_m (10.0), got 10.0"),
        ({"min_distance_m": -1.0}, "min_distance_m must be >= 0, got -1.0"),
        ({"bandwidth_hz": 0.0}, "bandwidth_hz must be > 0, got 0.0"),
        ({"tx_power_w": -0.2}, "tx_power_w must be > 0, got -0.2"),
        ({"noise_dbm": math.nan}, "noise_dbm must be a finite number, got nan"),
        ({"path_loss_db": math.inf}, "path_loss_db must be a finite number, got inf"),
    ],
)
def test_cell_checks(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as info:
        WirelessCell(**fields)
    assert str(info.value) == f"WirelessCell: {message}"


def test_function_input_checks() -> None:
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: rate_bps(CELL, 0.0, GAIN_100M), "rate_bps: share must be in (0, 1], got 0.0"),
        (lambda: rate_bps(CELL, 1.5, GAIN_100M), "rate_bps: share must be in (0, 1], got 1.5"),
        (lambda: spectral_efficiency(CELL, -1e-10), "snr: gain must be >= 0, got -1e-10"),
        (
            lambda: snr_db(CELL, 0.0),
            "snr_db: gain must be > 0 for a finite SNR in dB, got 0.0",
        ),
        (lambda: upload_time_s(100, 0.0), "upload_time_s: rate_bps must be > 0, got 0.0"),
        (lambda: upload_time_s(-1, 1e6), "upload_time_s: bits must be >= 0, got -1"),
        (lambda: channel_gain(CELL, 0.0, 1.0), "channel_gain: distance_m must be > 0, got 0.0"),
        (lambda: channel_gain(CELL, 50.0, -1.0), "channel_gain: fading must be >= 0, got -1.0"),
        (
            lambda: draw_channels(CELL, -1, np.random.default_rng(0)),
            "draw_channels: num_users must be an integer >= 0, got -1",
        ),
        (
            lambda: draw_channels(CELL, 2.0, np.random.default_rng(0)),  # type: ignore[arg-type]
            "draw_channels: num_users must be an integer >= 0, got 2.0",
        ),
        (
            lambda: ChannelDraw((1.0,), (1.0, 2.0), (1.0,)),
            "ChannelDraw: distances_m, fading and gains must have one entry per user, "
            "got 1, 2 and 1",
        ),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == message
