"""Uplink bandwidth split over OFDMA (Zhu et al., seed 001, §II-B and §III-B).

User k uploads λ·I_k bits, λ = 16·(h^d_1 + h^v_1) bits per prompt token (Eq. 15: the
prompt's FP16 embeddings for both models, read literally, SEED-NOTES §2.5, 8), at
w_k·B·e_k bit/s where e_k = log2(1 + p_k·g_k/σ²) is its spectral efficiency. The upload
ends when the slowest user is done (Eq. 16).

Optimal split (P1, Eqs. 25–27): every user finishes at the same time,
w*_k = (I_k / e_k) / Σ_k' (I_k' / e_k'), t*_com = Σ_k λ·I_k / (B·e_k). Remark 1: users
with poor channels get more bandwidth. The baseline splits the band equally.
"""

from __future__ import annotations

from collections.abc import Sequence


def upload_bits_per_token(draft_hidden: int, verify_hidden: int) -> int:
    """λ = 16·(h^d_1 + h^v_1)."""
    return 16 * (draft_hidden + verify_hidden)


def _check(bits: Sequence[float], efficiencies: Sequence[float], bandwidth_hz: float) -> None:
    if len(bits) != len(efficiencies) or not bits:
        raise ValueError(
            f"need one spectral efficiency per user: {len(bits)} uploads, "
            f"{len(efficiencies)} efficiencies"
        )
    if bandwidth_hz <= 0 or min(efficiencies) <= 0 or min(bits) < 0:
        raise ValueError("bandwidth and efficiencies must be > 0 and upload sizes >= 0")


def optimal_shares(bits: Sequence[float], efficiencies: Sequence[float]) -> tuple[float, ...]:
    """Eq. 27: w*_k ∝ bits_k / e_k (the prompt lengths' λ cancels)."""
    _check(bits, efficiencies, 1.0)
    need = [b / e for b, e in zip(bits, efficiencies, strict=True)]
    total = sum(need)
    if total == 0:
        return tuple(1.0 / len(bits) for _ in bits)
    return tuple(x / total for x in need)


def uniform_shares(num_users: int) -> tuple[float, ...]:
    """The baseline: B / K each."""
    if num_users < 1:
        raise ValueError("need at least one user")
    return tuple(1.0 / num_users for _ in range(num_users))


def upload_time_s(
    bits: Sequence[float],
    efficiencies: Sequence[float],
    shares: Sequence[float],
    bandwidth_hz: float,
) -> float:
    """Eqs. 15–16: T_com = max_k bits_k / (w_k·B·e_k)."""
    _check(bits, efficiencies, bandwidth_hz)
    if len(shares) != len(bits) or sum(shares) > 1.0 + 1e-9 or min(shares) < 0:
        raise ValueError(f"shares must be one per user, >= 0, summing to <= 1: {shares}")
    worst = 0.0
    for b, e, w in zip(bits, efficiencies, shares, strict=True):
        if b > 0:
            if w <= 0:
                raise ValueError("a user with data to upload needs a bandwidth share > 0")
            worst = max(worst, b / (w * bandwidth_hz * e))
    return worst


def optimal_upload_s(
    bits: Sequence[float], efficiencies: Sequence[float], bandwidth_hz: float
) -> float:
    """Eq. 26: t*_com = Σ_k bits_k / (B·e_k)."""
    _check(bits, efficiencies, bandwidth_hz)
    return sum(b / (bandwidth_hz * e) for b, e in zip(bits, efficiencies, strict=True))
