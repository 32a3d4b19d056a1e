"""The bounded counts and sizes of :mod:`edgespec.argument_types` and the flags that use
them: the synthetic target's ``--synthetic-layers`` / ``--synthetic-hidden`` (one check,
``bench serve`` and ``bench prefix`` alike) and the repetition counts ``--runs``,
``--warmup`` (``profile``, ``calibrate``) and ``--repeats`` (``bench prefix``): a value out
of range is argparse's usage error naming the flag, exit 2, no traceback."""

from __future__ import annotations

import argparse

import pytest

from edgespec.argument_types import (
    MAX_REPETITIONS,
    MAX_SYNTHETIC_HIDDEN,
    MAX_SYNTHETIC_LAYERS,
    logit_bias_pairs,
    repetitions,
    synthetic_hidden,
    synthetic_layers,
    warmup_repetitions,
)
from edgespec.cli import main

HIDDEN_ODD_HEADS = "must be a multiple of 8 (4 attention heads of an even size), got {}"
HELD = " (the synthetic target is held in memory)"
PASSES = " (passes per measurement)"


def test_the_bounds_and_their_edges() -> None:
    assert (MAX_SYNTHETIC_LAYERS, MAX_SYNTHETIC_HIDDEN, MAX_REPETITIONS) == (32, 2048, 1000)
    assert (synthetic_layers("1"), synthetic_layers("32")) == (1, 32)
    assert (synthetic_hidden("8"), synthetic_hidden("2048")) == (8, 2048)
    assert (repetitions("1"), repetitions("1000")) == (1, 1000)
    assert (warmup_repetitions("0"), warmup_repetitions("1000")) == (0, 1000)
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be >= 1, got 0$"):
        synthetic_hidden("0")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "serve", "--synthetic-hidden", "33"], HIDDEN_ODD_HEADS.format(33)),
        (["bench", "serve", "--synthetic-hidden", "36"], HIDDEN_ODD_HEADS.format(36)),
        (["bench", "prefix", "--synthetic-hidden", "36"], HIDDEN_ODD_HEADS.format(36)),
        (["bench", "serve", "--synthetic-hidden", "2056"], f"must be <= 2,048{HELD}, got 2056"),
        (["bench", "prefix", "--synthetic-hidden", "4096"], f"must be <= 2,048{HELD}, got 4096"),
        (["bench", "serve", "--synthetic-layers", "33"], f"must be <= 32{HELD}, got 33"),
        (["bench", "prefix", "--synthetic-layers", "64"], f"must be <= 32{HELD}, got 64"),
        (["bench", "prefix", "--repeats", "1001"], f"must be <= 1,000{PASSES}, got 1001"),
        (["bench", "prefix", "--repeats", "0"], "must be >= 1, got 0"),
        (["profile", "--target", "t", "--runs", "1001"], f"must be <= 1,000{PASSES}, got 1001"),
        (["profile", "--target", "t", "--runs", "0"], "must be >= 1, got 0"),
        (["profile", "--target", "t", "--warmup", "1001"], f"must be <= 1,000{PASSES}, got 1001"),
        (["profile", "--target", "t", "--warmup", "-1"], "must be >= 0, got -1"),
        (["calibrate", "--runs", str(10**9)], f"must be <= 1,000{PASSES}, got {10**9}"),
        (["calibrate", "--warmup", "1001"], f"must be <= 1,000{PASSES}, got 1001"),
    ],
)  # fmt: skip
def test_out_of_range_is_a_usage_error_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = argv[-2]
    prog = " ".join(argv[:2]) if argv[0] == "bench" else argv[0]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"edgespec {prog}: error: argument {flag}: {message}"
    assert "Traceback" not in err


def test_logit_bias_pairs_are_id_colon_bias() -> None:
    assert logit_bias_pairs("506:-100,7:2.5") == ((506, -100.0), (7, 2.5))
    for bad, item in (("3:1,4", "4"), ("x:1", "x:1"), ("-1:2", "-1:2"), ("3:y", "3:y")):
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            logit_bias_pairs(bad)
        assert str(caught.value) == (
            f"expected comma-separated ID:BIAS pairs (a token id >= 0, a number), got "
            f"{item!r} in {bad!r}"
        )
