"""argparse value types shared by the subcommands: a bad value is argparse's usage error
(the flag named, exit status 2), caught before any work starts."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1 (``--workers``, ``--threads``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value
