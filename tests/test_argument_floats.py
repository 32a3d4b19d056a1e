"""``positive_float`` and ``non_negative_float`` (``--lr``, ``--weight-decay``, the
distillation budgets) refuse what is not a finite number: ``inf`` trains a NaN model."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from edgespec.argument_types import (
    FLOAT32_MAX,
    non_negative_float,
    optimiser_decay,
    optimiser_rate,
    positive_float,
)
from edgespec.cli import main


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


@pytest.mark.parametrize(("parse", "flag"), [(optimiser_rate, "--lr"),
                                             (optimiser_decay, "--weight-decay")])  # fmt: skip
def test_an_optimiser_setting_past_float32_is_refused_at_its_flag(
    parse: Callable[[str], float], flag: str
) -> None:
    """``train awc --lr 1e300`` ended in torch's "value cannot be converted to type float
    without overflow" traceback; the largest float32 itself is taken."""
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse("1e300")
    assert (
        str(info.value) == "must be <= 3.403e+38 (a float32, as the optimiser holds it), got 1e+300"
    )
    assert parse("3.4028234663852886e38") == FLOAT32_MAX


def test_train_awc_refuses_an_lr_past_float32_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["train", "awc", "--data", "d", "--out", "o.json", "--lr", "1e300"])
    assert info.value.code == 2
    assert "argument --lr: must be <= 3.403e+38 (a float32" in capsys.readouterr().err
