"""A single-cell OFDMA uplink: user positions, Rayleigh fading and Shannon rates.

Zhu et al. (seed 001, §II-B) model the upload of K users' prompts to a small base station
(SBS) at the centre of a cell:

* channel gain      g_k = g0·ϱ_k·d_k^-2, with ϱ_k ~ Exp(1) (Rayleigh fading, power gain)
  and d_k the user's distance to the SBS, users uniform in the cell;
* Eq. 15 upload     T_k,com = λ·I_k / (w_k·B_w·log2(1 + p_k·g_k/σ²)), w_k the user's share
  of the bandwidth B_w, p_k its transmit power, σ² the noise power;
* Eq. 16            T_com = max_k T_k,com.

Pure functions over numpy (the same link model gives WISV's channel-state features), no
state; randomness comes in as a :class:`numpy.random.Generator`.

Readings of what the paper leaves open (SEED-NOTES §2.5 item 4):

* **g0.** Table II's "g0 = −30 dBm path loss constant" puts a power unit on a dimensionless
  gain. We read −30 dBm as the power 10^((−30−30)/10) W = 1e-6 W and take that number as
  the gain: g0 = 1e-6 = −60 dB (the literal unit conversion), ``path_loss_db=-60.0``, the
  default. The alternative reading, −30 dB (g0 = 1e-3), is ``path_loss_db=-30.0``. Only
  the −60 dB reading makes the paper's Fig. 9 bandwidth gains reachable (SEED-NOTES §2.4).
* **σ².** −106 dBm is the total noise power over the band; it is not scaled by the share
  w_k a user gets (as Eq. 15 is printed).
* **Minimum distance.** The paper gives none (d → 0 gives an unbounded rate); users are
  uniform by area in the annulus between ``min_distance_m`` = 10 m and ``radius_m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Real

import numpy as np


def _finite(where: str, name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{where}: {name} must be a finite number, got {value!r}")


MAX_RADIUS_M = 1e7
"""The largest cell radius, metres (10,000 km: past any cell; a larger one overflowed)."""


@dataclass(frozen=True, slots=True)
class WirelessCell:
    """One cell's uplink parameters (defaults: Zhu et al. Table II and §V)."""

    radius_m: float = 400.0
    min_distance_m: float = 10.0
    bandwidth_hz: float = 20e6
    noise_dbm: float = -106.0
    tx_power_w: float = 0.2
    path_loss_db: float = -60.0

    def __post_init__(self) -> None:
        for field in fields(self):
            _finite("WirelessCell", field.name, getattr(self, field.name))
        if self.min_distance_m < 0:
            raise ValueError(
                f"WirelessCell: min_distance_m must be >= 0, got {self.min_distance_m}"
            )
        if self.radius_m <= self.min_distance_m:
            raise ValueError(
                f"WirelessCell: radius_m must be > min_distance_m ({self.min_distance_m}), "
                f"got {self.radius_m}"
            )
        for name in ("bandwidth_hz", "tx_power_w"):
            if getattr(self, name) <= 0:
                raise ValueError(f"WirelessCell: {name} must be > 0, got {getattr(self, name)}")
        if self.radius_m > MAX_RADIUS_M:  # its square overflowed as users were placed
            raise ValueError(
                f"WirelessCell: radius_m must be <= {MAX_RADIUS_M:g}, got {self.radius_m}"
            )
        if self.bandwidth_hz < 1.0:  # an upload of inf s, and a simulated T_inf of nan
            raise ValueError(f"WirelessCell: bandwidth_hz must be >= 1, got {self.bandwidth_hz}")

    @property
    def noise_w(self) -> float:
        """σ² in watts: 10^((dBm − 30)/10)."""
        return float(10.0 ** ((self.noise_dbm - 30.0) / 10.0))

    @property
    def path_loss_gain(self) -> float:
        """g0 as a linear gain: 10^(dB/10)."""
        return float(10.0 ** (self.path_loss_db / 10.0))


@dataclass(frozen=True, slots=True)
class ChannelDraw:
    """One draw of K users' channels: distance d_k, fading ϱ_k and gain g0·ϱ_k·d_k^-2."""

    distances_m: tuple[float, ...]
    fading: tuple[float, ...]
    gains: tuple[float, ...]

    def __post_init__(self) -> None:
        sizes = {len(self.distances_m), len(self.fading), len(self.gains)}
        if len(sizes) != 1:
            raise ValueError(
                "ChannelDraw: distances_m, fading and gains must have one entry per user, got "
                f"{len(self.distances_m)}, {len(self.fading)} and {len(self.gains)}"
            )

    @property
    def num_users(self) -> int:
        return len(self.gains)


def channel_gain(cell: WirelessCell, distance_m: float, fading: float) -> float:
    """g = g0·ϱ·d^-2 (Zhu §II-B) for a user ``distance_m`` from the SBS."""
    _finite("channel_gain", "distance_m", distance_m)
    _finite("channel_gain", "fading", fading)
    if distance_m <= 0:
        raise ValueError(f"channel_gain: distance_m must be > 0, got {distance_m}")
    if fading < 0:
        raise ValueError(f"channel_gain: fading must be >= 0, got {fading}")
    return cell.path_loss_gain * fading / (distance_m * distance_m)


def draw_channels(cell: WirelessCell, num_users: int, rng: np.random.Generator) -> ChannelDraw:
    """Draw ``num_users`` users uniform by area in the cell's annulus, with Rayleigh fading.

    d = sqrt(U·(R² − d_min²) + d_min²) with U uniform in (0, 1] (so d > 0 even when
    d_min = 0), then ϱ ~ Exp(1). The draws come in that order: ``num_users`` uniforms, then
    ``num_users`` exponentials, so one seed gives one draw.
    """
    if isinstance(num_users, bool) or not isinstance(num_users, int) or num_users < 0:
        raise ValueError(f"draw_channels: num_users must be an integer >= 0, got {num_users!r}")
    inner_sq = cell.min_distance_m**2
    uniform = 1.0 - rng.random(num_users)
    distances = np.sqrt(uniform * (cell.radius_m**2 - inner_sq) + inner_sq)
    fading = rng.exponential(1.0, num_users)
    gains = cell.path_loss_gain * fading / (distances * distances)
    return ChannelDraw(
        tuple(float(d) for d in distances),
        tuple(float(f) for f in fading),
        tuple(float(g) for g in gains),
    )


def _check_gain(where: str, gain: float) -> None:
    _finite(where, "gain", gain)
    if gain < 0:
        raise ValueError(f"{where}: gain must be >= 0, got {gain}")


def snr(cell: WirelessCell, gain: float) -> float:
    """Received signal-to-noise ratio p·g/σ² (linear), over the whole band."""
    _check_gain("snr", gain)
    return cell.tx_power_w * gain / cell.noise_w


def snr_db(cell: WirelessCell, gain: float) -> float:
    """10·log10(p·g/σ²); ``gain`` must be > 0 (a zero gain has no finite SNR in dB)."""
    value = snr(cell, gain)
    if value <= 0:
        raise ValueError(f"snr_db: gain must be > 0 for a finite SNR in dB, got {gain}")
    return 10.0 * math.log10(value)


def spectral_efficiency(cell: WirelessCell, gain: float) -> float:
    """log2(1 + p·g/σ²) in bits/s/Hz (the Shannon term of Eq. 15)."""
    return math.log2(1.0 + snr(cell, gain))


def rate_bps(cell: WirelessCell, share: float, gain: float) -> float:
    """Eq. 15's rate w·B_w·log2(1 + p·g/σ²) for a user with bandwidth ``share`` w in (0, 1]."""
    _finite("rate_bps", "share", share)
    if not 0 < share <= 1:
        raise ValueError(f"rate_bps: share must be in (0, 1], got {share}")
    return share * cell.bandwidth_hz * spectral_efficiency(cell, gain)


def upload_time_s(bits: float, rate_bps: float) -> float:
    """Eq. 15: seconds to send ``bits`` at ``rate_bps`` (bits >= 0, rate > 0)."""
    _finite("upload_time_s", "bits", bits)
    _finite("upload_time_s", "rate_bps", rate_bps)
    if bits < 0:
        raise ValueError(f"upload_time_s: bits must be >= 0, got {bits}")
    if rate_bps <= 0:
        raise ValueError(f"upload_time_s: rate_bps must be > 0, got {rate_bps}")
    return bits / rate_bps
