"""``edgespec reproduce PAPER [--quick]``: re-run a paper's claims and compare.

Writes ``runs/reproduce-PAPER-<time>/`` (REPORT.md, the scenario files it ran, plots,
results.json) and prints the claims table. Each paper is a package beside this module
(``wisp/``, ``dsd/``, ``zhu/``, ``wisv/``) whose ``report.reproduce`` runs its claims
through the shared framework (:mod:`edgespec.reproduce.claims`); a paper not reproduced
yet exits with status 2.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from edgespec.arguments import add_quiet, add_workers


class Reproduce(Protocol):
    """A paper's reproduction: run its claims into ``out``, print and return the rows."""

    def __call__(
        self, out: Path, *, quick: bool, workers: int, progress: bool, command: str
    ) -> list[Any]: ...


def _wisp() -> Reproduce:
    from edgespec.reproduce.wisp.report import reproduce

    return reproduce


def _dsd() -> Reproduce:
    from edgespec.reproduce.dsd.report import reproduce

    return reproduce


def _zhu() -> Reproduce:
    from edgespec.reproduce.zhu.report import reproduce

    return reproduce


def _wisv() -> Reproduce:
    from edgespec.reproduce.wisv.report import reproduce

    return reproduce


def _wisv_real() -> Reproduce:
    from edgespec.reproduce.wisv.real_pair.report import reproduce

    return reproduce


def _wisv_heldout() -> Reproduce:
    from edgespec.reproduce.wisv.real_pair.heldout import reproduce

    return reproduce


# Paper → its reproduction (imported when chosen); None: not reproduced yet.
PAPERS: dict[str, Callable[[], Reproduce] | None] = {
    "wisp": _wisp,
    "dsd": _dsd,
    "zhu": _zhu,
    "wisv": _wisv,
    "wisv-real-pair": _wisv_real,
    "wisv-heldout": _wisv_heldout,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick", action="store_true", help="a reduced run (CI): fewer classes, shorter runs"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default runs/reproduce-PAPER-<time>)"
    )
    add_workers(parser, 1, "local processes for the runs")
    add_quiet(parser)


def run(args: argparse.Namespace) -> int:
    load = PAPERS[args.seed]
    if load is None:
        print(f"edgespec reproduce {args.seed}: not reproduced yet", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)  # this command owns its process; its MLPs are tiny
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out: Path = args.out or Path("runs") / f"reproduce-{args.seed}-{stamp}"
    command = "edgespec reproduce " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    load()(
        out,
        quick=args.quick,
        workers=args.workers,
        progress=not args.quiet,
        command=command.strip(),
    )
    return 0
