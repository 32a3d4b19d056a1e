"""top_k and min_p by hand (:func:`edgespec.runtime.sampling.logits_to_probs`): what each
keeps, ties, the order of the cuts (top-k, then top-p over what it kept, then min-p), rows
of a 262,144-token vocabulary each as they are alone, and the ranges the core refuses."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.sampling_cuts import cuts_on
from edgespec.core.types import SamplingParams
from edgespec.runtime.sampling import TargetProbs, logits_to_probs


def _row(*probs: float) -> np.ndarray:
    return np.log(np.array([probs], dtype=np.float32))


def test_top_k_keeps_the_k_likeliest_renormalized() -> None:
    got = logits_to_probs(_row(0.1, 0.4, 0.2, 0.3), 1.0, top_k=2)
    np.testing.assert_allclose(got, [[0.0, 4 / 7, 0.0, 3 / 7]], rtol=1e-6)


def test_top_k_ties_keep_the_lowest_ids() -> None:
    got = logits_to_probs(np.zeros((2, 5), dtype=np.float32), 1.0, top_k=3)
    np.testing.assert_array_equal(got, [[1 / 3, 1 / 3, 1 / 3, 0, 0]] * 2)


@pytest.mark.parametrize("top_k", [0, 4, 5, 2**32 - 1])
def test_top_k_off_or_at_least_the_row_cuts_nothing(top_k: int) -> None:
    logits = _row(0.1, 0.4, 0.2, 0.3)
    np.testing.assert_array_equal(logits_to_probs(logits, 1.0, top_k=top_k),
                                  logits_to_probs(logits, 1.0))  # fmt: skip


def test_top_p_is_taken_over_what_top_k_kept() -> None:
    """Top-p 0.5 of the whole row keeps 0.4 and 0.3 (the mass before 0.3 is 0.4 < 0.5);
    after top-k 2 the row is (4/7, 3/7), whose first token alone holds 0.57: one token."""
    logits = _row(0.1, 0.4, 0.2, 0.3)
    np.testing.assert_allclose(logits_to_probs(logits, 1.0, 0.5),
                               [[0.0, 4 / 7, 0.0, 3 / 7]], rtol=1e-6)  # fmt: skip
    np.testing.assert_array_equal(logits_to_probs(logits, 1.0, 0.5, top_k=2), [[0, 1, 0, 0]])


def test_min_p_keeps_tokens_at_least_that_share_of_the_likeliest() -> None:
    logits = _row(0.1, 0.4, 0.2, 0.3)
    np.testing.assert_allclose(logits_to_probs(logits, 1.0, min_p=0.45),
                               [[0.0, 4 / 9, 2 / 9, 3 / 9]], rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(logits_to_probs(logits, 1.0, min_p=0.6),
                               [[0.0, 4 / 7, 0.0, 3 / 7]], rtol=1e-6)  # fmt: skip
    np.testing.assert_array_equal(logits_to_probs(logits, 1.0, min_p=1.0), [[0, 1, 0, 0]])


def test_min_p_comes_after_top_p() -> None:
    """Top-p 0.75 keeps 0.4, 0.3 and 0.2 (the mass before 0.2 is 0.7), then min_p 0.45 all
    three (2/9 is above 0.45 x 4/9). The other order would cut min-p first (the same three),
    then top-p over (4/9, 3/9, 2/9), where the mass before 2/9 is 7/9 > 0.75: two tokens."""
    logits = _row(0.1, 0.4, 0.2, 0.3)
    np.testing.assert_allclose(logits_to_probs(logits, 1.0, 0.75, min_p=0.45),
                               [[0.0, 4 / 9, 2 / 9, 3 / 9]], rtol=1e-6)  # fmt: skip


@pytest.mark.parametrize(
    ("top_p", "top_k", "min_p"), [(1.0, 50, 0.0), (0.9, 0, 0.05), (0.95, 1000, 0.01), (1.0, 0, 0.2)]
)
def test_262144_token_rows_are_each_as_alone(top_p: float, top_k: int, min_p: float) -> None:
    """A block's rows cut at the real vocabulary's size, each bit for bit the row cut alone,
    keeping what the cuts say: at most top_k tokens, each at least min_p of the likeliest."""
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal((3, 262_144)) * 3).astype(np.float32)
    block = logits_to_probs(logits, 0.8, top_p, top_k, min_p)
    target = TargetProbs(logits, 0.8, top_p, top_k, min_p)
    for i in range(3):
        alone = logits_to_probs(logits[i], 0.8, top_p, top_k, min_p)
        assert np.array_equal(block[i], alone) and np.array_equal(target.row(i), alone)
        kept = np.flatnonzero(alone)
        assert kept.size <= (top_k or kept.size) and alone.sum() == pytest.approx(1.0)
        assert alone[kept].min() >= min_p * alone.max()
        assert np.argmax(logits[i]) in kept


def test_cuts_on_names_what_greedy_decoding_would_ignore() -> None:
    assert cuts_on(1.0, 0, 0.0) == ()
    assert cuts_on(0.9, 40, 0.1) == ("top_k", "top_p", "min_p")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"top_k": -1}, "top_k must be a whole number in [0, 2**32) (0: every token), got -1"),
        ({"top_k": 2**32}, "top_k must be a whole number in [0, 2**32) (0: every token), got "
                           "4294967296"),
        ({"top_k": 2.0}, "top_k must be a whole number in [0, 2**32) (0: every token), got 2.0"),
        ({"min_p": 1.5}, "min_p must be in [0, 1] (0: no cut), got 1.5"),
        ({"min_p": float("nan")}, "min_p must be in [0, 1] (0: no cut), got nan"),
        ({"min_p": 1e-50}, "min_p must not be below 1.175e-38 unless 0 (the wire's float32), "
                           "got 1e-50"),
    ],
)  # fmt: skip
def test_sampling_params_refuse_cuts_out_of_range(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as info:
        SamplingParams(temperature=1.0, **fields)  # type: ignore[arg-type]
    assert str(info.value) == message
