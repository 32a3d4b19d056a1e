"""logits_to_probs by hand: temperature, nucleus truncation at its boundary and among
ties, top_p = 1 truncating nothing, and the refusal of a non-positive temperature."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgespec.runtime.sampling import logits_to_probs


def test_temperature_divides_the_logits() -> None:
    logits = np.array([[0.0, math.log(2.0), math.log(4.0)]], dtype=np.float32)
    np.testing.assert_allclose(logits_to_probs(logits, 1.0), [[1 / 7, 2 / 7, 4 / 7]], rtol=1e-6)
    root2 = math.sqrt(2.0)
    expected = np.array([1.0, root2, 2.0]) / (3.0 + root2)
    np.testing.assert_allclose(logits_to_probs(logits, 2.0), [expected], rtol=1e-6)


@pytest.mark.parametrize(
    ("top_p", "expected"),
    [
        # four equal tokens: the mass before the third is exactly 0.5, so top_p = 0.5 keeps
        # two, and among ties the lower token ids
        (0.5, [0.5, 0.5, 0.0, 0.0]),
        (0.25, [1.0, 0.0, 0.0, 0.0]),
        (0.2500001, [0.5, 0.5, 0.0, 0.0]),
        (0.01, [1.0, 0.0, 0.0, 0.0]),  # the most likely token is always kept
    ],
)
def test_nucleus_keeps_tokens_while_the_mass_before_them_is_below_top_p(
    top_p: float, expected: list[float]
) -> None:
    probs = logits_to_probs(np.zeros((2, 4), dtype=np.float32), 1.0, top_p)
    np.testing.assert_array_equal(probs, [expected, expected])


def test_nucleus_keeps_the_token_that_crosses_top_p() -> None:
    logits = np.log(np.array([[0.1, 0.4, 0.2, 0.3]], dtype=np.float32))
    probs = logits_to_probs(logits, 1.0, 0.5)  # 0.4 is below 0.5, so 0.3 is kept too
    np.testing.assert_allclose(probs, [[0.0, 4 / 7, 0.0, 3 / 7]], rtol=1e-6)


def test_top_p_one_truncates_nothing() -> None:
    """In float64 the first token's probability rounds to 1.0: a truncation at 1.0 would
    drop the second, which is still a possible draw."""
    probs = logits_to_probs(np.array([[0.0, -50.0]], dtype=np.float32), 1.0, 1.0)
    assert probs[0, 0] == 1.0
    assert probs[0, 1] == pytest.approx(math.exp(-50.0), rel=1e-6, abs=0.0)


@pytest.mark.parametrize("temperature", [0.0, -1.0])
def test_a_non_positive_temperature_is_refused(temperature: float) -> None:
    with pytest.raises(ValueError) as info:
        logits_to_probs(np.zeros((1, 3), dtype=np.float32), temperature)
    assert str(info.value) == f"temperature must be > 0 for sampling, got {temperature}"
