"""WISV's payload and communication-time model (edgespec/core/semantic_link.py, Eqs. 3–10)
against hand computations."""

from __future__ import annotations

import pytest

from edgespec.core.semantic_link import (
    HEADER_BITS,
    LinkRates,
    Payloads,
    choose_upload,
    fh_comm_s,
    greedy_comm_s,
    rejection_comm_s,
    sh_comm_s,
    token_id_bits,
)

LLAMA = Payloads(vocab_size=128_256, draft_hidden=2048)
"""Llama-3.2-1B drafting over Llama-3's vocabulary (WISV's simulation)."""


def test_token_ids_take_the_ceiling_of_log2_v_bits() -> None:
    assert token_id_bits(128_256) == 17  # 2**16 < 128,256 <= 2**17
    assert token_id_bits(262_144) == 18  # exactly 2**18 (Gemma 3)
    assert token_id_bits(262_145) == 19
    assert (token_id_bits(2), token_id_bits(1)) == (1, 0)
    with pytest.raises(ValueError, match="vocabulary size must be >= 1"):
        token_id_bits(0)


def test_payloads_by_hand() -> None:
    p = LLAMA
    assert HEADER_BITS == 512  # the project's 64-byte header
    assert p.hidden_bits == 2048 * 16 == 32_768  # Eq. 3
    assert p.feedback_bits() == 16 + 17 + 512 == 545  # Eq. 4
    assert p.fh_uplink_bits(10) == 10 * (17 + 32_768) + 512 == 328_362  # Eq. 5
    assert p.greedy_uplink_bits(10) == 170 + 512 == 682  # = SH's first uplink (Eq. 7)
    assert p.sh_request_bits(3) == 3 * 16 + 512 == 560  # Eq. 8
    assert p.sh_second_uplink_bits(3) == 3 * 32_768 + 512 == 98_816  # Eq. 9
    assert p.probabilities_bits(64) == 64 * 128_256 * 16 == 131_334_144
    assert p.rejection_uplink_bits(64) == 131_334_144 + 64 * 17 + 512
    assert p.sh_request_bits(0) == 512 and p.sh_second_uplink_bits(0) == 512
    with pytest.raises(ValueError, match="token count must be >= 0"):
        p.fh_uplink_bits(-1)
    with pytest.raises(ValueError, match="draft_hidden must be >= 1"):
        Payloads(128_256, 0)


def test_communication_times_by_hand() -> None:
    link = LinkRates(uplink_bps=20e6, rtt_s=0.05)
    # Eq. 6: (328,362 + 545) bits at 20 Mbit/s + one RTT
    assert fh_comm_s(LLAMA, link, 10) == pytest.approx((328_362 + 545) / 20e6 + 0.05, rel=1e-12)
    assert greedy_comm_s(LLAMA, link, 10) == pytest.approx((682 + 545) / 20e6 + 0.05, rel=1e-12)
    # Eq. 10: no mismatch, no request, no second RTT; with 3 the exchange and RTT are added
    assert sh_comm_s(LLAMA, link, 10, 0) == greedy_comm_s(LLAMA, link, 10)
    extra = (560 + 98_816) / 20e6 + 0.05
    assert sh_comm_s(LLAMA, link, 10, 3) == pytest.approx(
        greedy_comm_s(LLAMA, link, 10) + extra, rel=1e-12
    )
    # Rejection sampling at γ = 64 and 20 Mbit/s: 6.57 s a round (Table I implies 6.577 s)
    rs = rejection_comm_s(LLAMA, link, 64)
    assert rs == pytest.approx((131_334_144 + 64 * 17 + 512 + 545) / 20e6 + 0.05, rel=1e-12)
    assert rs - greedy_comm_s(LLAMA, link, 64) == pytest.approx(6.5667, abs=1e-4)


def test_packet_errors_and_an_asymmetric_downlink_slow_serialisation() -> None:
    lossy = LinkRates(uplink_bps=20e6, rtt_s=0.0, uplink_per=0.2)
    assert lossy.up_s(16_000_000) == pytest.approx(1.0)  # 16 Mbit / (20 Mbit/s × 0.8)
    assert lossy.down_s(16_000_000) == pytest.approx(1.0)  # the uplink's rate and PER
    asym = LinkRates(uplink_bps=20e6, rtt_s=0.0, downlink_bps=100e6, downlink_per=0.0)
    assert asym.down_s(100_000_000) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="uplink_per must be in"):
        LinkRates(20e6, 0.0, uplink_per=1.0)
    with pytest.raises(ValueError, match="rtt_s must be"):
        LinkRates(20e6, -1.0)


def test_fh_above_ten_milliseconds_of_rtt() -> None:
    assert choose_upload(0.05) == "fh"
    assert choose_upload(0.010) == "sh"  # "FH if RTT > 10 ms"
    assert choose_upload(0.005) == "sh"
