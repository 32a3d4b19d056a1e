"""``edgespec reproduce NAME``: every reproduction, registered in one shape (:data:`PAPERS`).

A :class:`Reproduction` is one ``edgespec reproduce NAME``: its help line and how it runs.
Two kinds share the shape:

* a paper's claims in the simulator (``claims``: the module of its
  ``report.reproduce(out, quick=..., workers=..., progress=..., command=...)``), run with
  this module's shared flags (``--quick --out --workers --quiet``): it writes
  ``runs/reproduce-NAME-<time>/`` (REPORT.md, the scenario files it ran, plots,
  results.json) and prints the claims table; each paper is a package beside this module
  whose report runs its claims through the shared framework
  (:mod:`edgespec.reproduce.claims`);
* a paper's system on the real runtime with flags of its own (``command``: a module with
  ``add_arguments(parser)`` and ``run(args) -> int``).

The CLI builds ``edgespec reproduce``'s choices from :data:`PAPERS` (imported when chosen,
so ``edgespec --help`` stays fast).
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from edgespec.arguments import add_quiet, add_workers
from edgespec.output_paths import claim_folder, writable_output_folder
from edgespec.sweeps.executor import check_workers

RUN_FILES = (
    "REPORT.md",
    "results.json",
    "scenarios/*.yaml",
    "profiles/*.yaml",
    "estimator.json",
    "predictor.json",
    "predictor.md",
    "fig*.png",
    "table*.png",
    "*-fig*.png",
)
"""What a claims reproduction writes into its folder (every paper's, as names or patterns):
an ``--out`` holding any of them holds an earlier run, refused unless ``--overwrite``."""


class Reproduce(Protocol):
    """A paper's claims: run them into ``out``, print and return the rows."""

    def __call__(
        self, out: Path, *, quick: bool, workers: int, progress: bool, command: str
    ) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class Reproduction:
    """One ``edgespec reproduce NAME``: ``claims`` (the module whose ``reproduce`` runs a
    paper's claims under the shared flags) or ``command`` (a module with its own
    ``add_arguments`` and ``run``), exactly one of them."""

    help: str
    claims: str = ""
    command: str = ""

    def __post_init__(self) -> None:
        if bool(self.claims) == bool(self.command):
            raise ValueError("a reproduction runs either claims or a command of its own")

    @property
    def module(self) -> str:
        """The module whose ``add_arguments`` and ``run`` the CLI calls."""
        return self.command or __name__


PAPERS: dict[str, Reproduction] = {
    "wisp": Reproduction(
        "WISP (seed 000): SLO-aware batching, the rejection predictor",
        claims="edgespec.reproduce.wisp.report",
    ),
    "dsd": Reproduction(
        "DSD (seed 004): DSD-Sim, adaptive window control",
        claims="edgespec.reproduce.dsd.report",
    ),
    "zhu": Reproduction(
        "Zhu et al. (seed 001): pipelined SD over an edge drafting server",
        claims="edgespec.reproduce.zhu.report",
    ),
    "wisv": Reproduction(
        "WISV (seed 003): CSI-aware semantic verification, simulated",
        claims="edgespec.reproduce.wisv.report",
    ),
    "wisp-serving": Reproduction(
        "WISP's batching vs FCFS vs SLED on the real server, drafter processes",
        command="edgespec.reproduce.wisp.serving",
    ),
    "wisp-estimator": Reproduction(
        "WISP's W9 alone: Eq. 19's held-out fit on bundled or freshly profiled timings",
        command="edgespec.reproduce.wisp.estimator_command",
    ),
    "dsd-real-pair": Reproduction(
        "DSD's window policies on the real pair over an emulated link",
        command="edgespec.reproduce.dsd.real_pair",
    ),
    "wisv-real-pair": Reproduction(
        "WISV's semantic verification on the real pair: answers vs threshold, latency",
        claims="edgespec.reproduce.wisv.real_pair.report",
    ),
    "wisv-heldout": Reproduction(
        "WISV's shipped default on the real pair: held-out answers and speed vs exact SD",
        command="edgespec.reproduce.wisv.real_pair.heldout_command",
    ),
}
"""Every reproduction by name, in the order ``edgespec reproduce --help`` lists them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The shared flags of the claims reproductions."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a reduced run (CI): fewer points and draws, shorter runs; its report says what "
        "it leaves out",
    )
    parser.add_argument(
        "--out",
        type=writable_output_folder,
        default=None,
        help="output folder (default runs/reproduce-PAPER-<time>)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="--out may hold an earlier reproduction: its files are removed first "
        "(default: refused)",
    )
    add_workers(parser, 1, "local processes for the runs")
    add_quiet(parser)


def default_folder(name: str) -> Path:
    """``runs/reproduce-NAME-<time>``."""
    return Path("runs") / f"reproduce-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_folder(name: str, out: Path | None, overwrite: bool) -> Path:
    """``out`` when it holds no earlier reproduction (or ``overwrite``: its files removed
    now), else a new :func:`default_folder` (``-2``, ``-3`` ... when taken)."""
    return claim_folder(out, default_folder(name), RUN_FILES, overwrite)


def command_line() -> str:
    """This ``edgespec reproduce ...`` invocation as one shell line (REPORT.md names it)."""
    return ("edgespec reproduce " + " ".join(shlex.quote(a) for a in sys.argv[2:])).strip()


def run(args: argparse.Namespace) -> int:
    """Run the claims of the paper ``args.seed`` names."""
    check_workers(args.workers)
    out = run_folder(args.seed, args.out, args.overwrite)  # refused before anything loads
    reproduce: Reproduce = importlib.import_module(PAPERS[args.seed].claims).reproduce
    import torch

    torch.set_num_threads(1)  # this command owns its process; its MLPs are tiny
    reproduce(
        out,
        quick=args.quick,
        workers=args.workers,
        progress=not args.quiet,
        command=command_line(),
    )
    return 0
