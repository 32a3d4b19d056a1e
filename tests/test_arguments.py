"""The shared argparse value types (edgespec.arguments), and the flags that use them:
a thread or worker count below 1 is argparse's usage error, not torch's traceback."""

from __future__ import annotations

import argparse

import pytest

from edgespec.arguments import positive_int
from edgespec.cli import main


def test_positive_int() -> None:
    assert positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be >= 1, got 0$"):
        positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected an integer, got 'x'$"):
        positive_int("x")


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["serve", "--target", "never-loaded"], "--threads"),
        (["train", "draft", "--data-dir", "d", "--out", "o"], "--threads"),
        (["train", "feature-draft", "--data-dir", "d", "--out", "o"], "--threads"),
        (["train", "stop-predictor", "--traces", "t.jsonl", "--out", "o"], "--threads"),
        (["train", "awc", "--data", "d", "--out", "o"], "--threads"),
        (["sim"], "--workers"),
    ],
)
def test_counts_below_one_are_usage_errors(
    command: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, flag, "0"])
    assert exit_info.value.code == 2
    prog = " ".join(
        ["edgespec", *command[:2]] if command[0] == "train" else ["edgespec", command[0]]
    )
    err = capsys.readouterr().err
    assert err.endswith(f"{prog}: error: argument {flag}: must be >= 1, got 0\n")
