"""``positive_float`` and ``non_negative_float`` (``--lr``, ``--weight-decay``, the
distillation budgets) refuse what is not a finite number: ``inf`` trains a NaN model."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from edgespec.argument_types import non_negative_float, positive_float


@pytest.mark.parametrize("parse", [positive_float, non_negative_float])
@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "Infinity", "1e999"])
def test_a_non_finite_number_is_refused(parse: Callable[[str], float], text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse(text)
    assert str(info.value) == f"must be a finite number, got {text!r}"


def test_finite_numbers_keep_their_ranges() -> None:
    assert positive_float("1e308") == 1e308 and non_negative_float("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be > 0, got 0$"):
        positive_float("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be >= 0, got -1$"):
        non_negative_float("-1")
