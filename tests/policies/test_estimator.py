from __future__ import annotations

import pytest

from edgespec.policies.estimator import (
    BatchShape,
    WispCoefficients,
    forward_flops,
    zhu_decode_flops,
    zhu_kv_bytes,
    zhu_param_bytes,
    zhu_prefill_flops,
    zhu_runtime_s,
)

# A LLaMA-7B-like block (Zhu's setup): J = 32, h1 = 4096, h2 = 11008.
J, H1, H2 = 32, 4096, 11008


def test_eq9_parameter_bytes() -> None:
    assert zhu_param_bytes(J, H1, H2) == 32 * (8 * 4096**2 + 4 * 4096 * 11008)
    assert zhu_param_bytes(1, 2, 3) == 8 * 4 + 4 * 6


def test_eq10_kv_bytes() -> None:
    assert zhu_kv_bytes(2, 3, [10, 5]) == 4 * 2 * 3 * 10 + 4 * 2 * 3 * 5


def test_eq11_prefill_and_eq12_decode_are_special_cases_of_forward_flops() -> None:
    assert zhu_prefill_flops(1, 2, 3, 5) == 8 * 5 * 4 + 4 * 25 * 2 + 4 * 5 * 2 * 3
    assert zhu_prefill_flops(J, H1, H2, 100) == forward_flops(J, H1, H2, 100, 0)
    assert zhu_decode_flops(1, 2, 3, 7) == 8 * 4 + 4 * 8 * 2 + 4 * 2 * 3
    assert zhu_decode_flops(J, H1, H2, 250) == forward_flops(J, H1, H2, 1, 250)


def test_eq14_verify_flops_follow_up_step() -> None:
    # Eq. 14, n > 1: 4·J·h1·(1 + l)·[2·h1 + I_kv + l + 1 + h2] with l = 4, I_kv = 300.
    expected = 4 * J * H1 * 5 * (2 * H1 + 300 + 5 + H2)
    assert forward_flops(J, H1, H2, 5, 300) == expected


def test_eq17_runtime() -> None:
    assert zhu_runtime_s(2e-12, 0.01, 1e9, 4) == pytest.approx(0.018)


def test_batch_shape_counts_wisp_eq18_terms() -> None:
    shape = BatchShape.of([(5, 500), (200, 0)])
    assert shape == BatchShape(2, 205, 505 * 5 + 200 * 200, 500)


def test_wisp_eq19_with_the_papers_a100_coefficients() -> None:
    coeffs = WispCoefficients(a_s=3.314e-5, b_compute_s=3.45e-8, b_read_s=4.62e-6, c_s=1.486e-2)
    # Cached short request of WISP's Fig. 4: 500-token prefix + 5 drafted tokens.
    shape = BatchShape.of([(5, 500)])
    expected = 3.314e-5 * 5 + 3.45e-8 * 505 * 5 + 4.62e-6 * 500 + 1.486e-2
    assert coeffs.estimate_s(shape) == pytest.approx(expected, rel=1e-15)
    assert coeffs.estimate_s(shape) == pytest.approx(0.0174228, abs=1e-7)


def test_negative_coefficients_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"^b_read_s must be finite and >= 0, got -1.0$"):
        WispCoefficients(1.0, 0.0, -1.0, 0.0)
