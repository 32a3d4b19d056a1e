"""The command line's shared pieces: argparse value types (a bad value is argparse's usage
error, the flag named, exit status 2, caught before any work starts) and the flags several
subcommands take, each defined once here so they read and check alike."""

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


def add_threads(
    parser: argparse.ArgumentParser, default: int | None, what: str = "torch CPU threads"
) -> None:
    """``--threads N`` (>= 1): torch's intra-op threads; ``default`` None leaves torch's."""
    stated = "torch's" if default is None else str(default)
    parser.add_argument(
        "--threads", type=positive_int, default=default, help=f"{what} (default {stated})"
    )


def cpu_list(text: str) -> tuple[int, ...]:
    """``--cpus``: CPU numbers as ``0``, ``0,2`` or ``0-3`` (a comma list of numbers and
    ranges), each one this process may run on."""
    import os

    cpus: set[int] = set()
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected CPU numbers like 0 or 0,2 or 0-3, got {text!r}"
        ) from None
    allowed = os.sched_getaffinity(0)
    outside = sorted(cpus - allowed)
    if not cpus or outside:
        raise argparse.ArgumentTypeError(
            f"CPUs {outside or text!r} are not among this process's CPUs {sorted(allowed)}"
        )
    return tuple(sorted(cpus))


def add_cpus(parser: argparse.ArgumentParser, side: str) -> None:
    """``--cpus LIST``: run on these CPUs only, with one torch thread each (the drafter and
    the server on one machine, each on CPUs of its own, as on separate devices)."""
    parser.add_argument(
        "--cpus", type=cpu_list, default=None, metavar="LIST",
        help=f"run the {side} on these CPUs only (e.g. 0 or 0-1), one torch thread each: "
        "give the drafter and the server CPUs of their own on one machine, as on separate "
        "devices (default: every CPU, shared)",
    )  # fmt: skip


def add_workers(
    parser: argparse.ArgumentParser, default: int, what: str = "local processes for the runs"
) -> None:
    """``--workers N`` (>= 1): processes (or Ray CPUs) running independent jobs."""
    parser.add_argument(
        "--workers", type=positive_int, default=default, help=f"{what} (default {default})"
    )


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress bar."""
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_seed(parser: argparse.ArgumentParser, what: str, default: int = 0) -> None:
    """``--seed N``: the seed of ``what``."""
    parser.add_argument(
        "--seed", type=int, default=default, help=f"seed of {what} (default {default})"
    )


def add_real_pair(
    parser: argparse.ArgumentParser,
    target: str = "gemma3-270m",
    draft: str | None = "gemma3-270m-draft",
    draft_help: str = "draft model (name or directory) or 'ngram'",
) -> None:
    """``--target MODEL --draft MODEL``: a real draft/target pair by name or directory."""
    parser.add_argument(
        "--target", default=target, help=f"target model, name or directory (default {target})"
    )
    stated = "none" if draft is None else draft
    parser.add_argument("--draft", default=draft, help=f"{draft_help} (default {stated})")


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """``--verbose``: the model libraries' progress bars and warnings (quiet without it)."""
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show the model libraries' progress bars and warnings (default: quiet)",
    )


def add_max_new_tokens(parser: argparse.ArgumentParser, default: int) -> None:
    """``--max-new-tokens N`` (>= 1): tokens each request generates."""
    parser.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=default,
        help=f"tokens per request (default {default})",
    )
