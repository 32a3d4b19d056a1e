"""``edgespec reproduce NAME``: every reproduction, registered in one shape (:data:`PAPERS`).

A :class:`Reproduction` is one ``edgespec reproduce NAME``: its help line and how it runs.
Two kinds share the shape:

* a paper's claims in the simulator (``claims``: the module of its
  ``report.reproduce(out, quick=..., workers=..., progress=..., command=...)``), run with
  this module's shared flags (``--quick --out --workers --quiet --overwrite``): it writes
  ``runs/reproduce-NAME-<time>/`` (REPORT.md, the scenario files it ran, plots,
  results.json: the ``files`` it declares) and prints the claims table; each paper is a
  package beside this module
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
from edgespec.errors import UserInputError
from edgespec.output_paths import writable_output_folder
from edgespec.reproduce.folder import claim_reproduction_folder
from edgespec.sim.run_folder import made_run_folder
from edgespec.sweeps.executor import check_workers

REPORT_FILES = ("REPORT.md", "results.json")
"""What every claims reproduction writes into its folder."""
SCENARIO_FILES = "scenarios/*.yaml"
"""The scenario files a simulated reproduction writes beside its report."""


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
    one_process: bool = False
    """Its runs share one process (the models load once): ``--workers`` above 1 is refused
    before anything else."""
    files: tuple[str, ...] = ()
    """What a claims reproduction writes into its folder (names or glob patterns, relative
    to it): an ``--out`` holding any of them is refused unless ``--overwrite`` removes them
    (:mod:`edgespec.reproduce.folder`); a command claims its own folder."""

    def __post_init__(self) -> None:
        if bool(self.claims) == bool(self.command):
            raise ValueError("a reproduction runs either claims or a command of its own")
        if bool(self.claims) != bool(self.files):
            raise ValueError("a claims reproduction, and only one, declares the files it writes")

    @property
    def module(self) -> str:
        """The module whose ``add_arguments`` and ``run`` the CLI calls."""
        return self.command or __name__


PAPERS: dict[str, Reproduction] = {
    "wisp": Reproduction(
        "WISP (seed 000): SLO-aware batching, the rejection predictor",
        claims="edgespec.reproduce.wisp.report",
        files=(
            *REPORT_FILES,
            SCENARIO_FILES,
            "profiles/edge-table6.yaml",
            "estimator.json",
            "predictor.json",
            "predictor.md",
            "fig7_violation_curves.png",
            "fig8_attribution.png",
            "table2_capacities.png",
        ),
    ),
    "dsd": Reproduction(
        "DSD (seed 004): DSD-Sim, adaptive window control",
        claims="edgespec.reproduce.dsd.report",
        files=(*REPORT_FILES, SCENARIO_FILES, "physical-fig*.png", "dsdsim_compat-fig*.png"),
    ),
    "zhu": Reproduction(
        "Zhu et al. (seed 001): pipelined SD over an edge drafting server",
        claims="edgespec.reproduce.zhu.report",
        files=REPORT_FILES,
    ),
    "wisv": Reproduction(
        "WISV (seed 003): CSI-aware semantic verification, simulated",
        claims="edgespec.reproduce.wisv.report",
        files=(*REPORT_FILES, SCENARIO_FILES),
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
        one_process=True,
        files=REPORT_FILES,
    ),
    "wisv-heldout": Reproduction(
        "WISV's shipped default on the real pair: held-out answers and speed vs exact SD",
        command="edgespec.reproduce.wisv.real_pair.heldout_command",
    ),
}
"""Every reproduction by name, in the order ``edgespec reproduce --help`` lists them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The shared flags of the claims reproductions (the help names the paper: the last word
    of ``parser.prog``, ``edgespec reproduce zhu``)."""
    name = parser.prog.rsplit(" ", 1)[-1]
    one_process = name in PAPERS and PAPERS[name].one_process
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
        help=f"output folder (default runs/reproduce-{name}-<time>)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="--out may hold an earlier reproduction: the files this paper writes are "
        "removed first, and another paper's where the folder records its run; no other file "
        "(default: refused)",
    )
    add_workers(
        parser, 1, "1 only: the models load once, in one process" if one_process else
        "local processes for the runs",
    )  # fmt: skip
    add_quiet(parser)


def default_folder(name: str) -> Path:
    """``runs/reproduce-NAME-<time>``."""
    return Path("runs") / f"reproduce-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_folder(name: str, out: Path | None, overwrite: bool) -> Path:
    """``out`` when it holds no earlier reproduction's files (or ``overwrite``: those removed
    now, and which it removed and kept said on stderr), else a new :func:`default_folder`
    (``-2``, ``-3`` ... when taken)."""
    declared = {paper: r.files for paper, r in PAPERS.items() if r.claims}
    folder, said = claim_reproduction_folder(name, out, default_folder(name), declared, overwrite)
    if said:
        print(said, file=sys.stderr)
    return folder


def command_line() -> str:
    """This ``edgespec reproduce ...`` invocation as one shell line (REPORT.md names it)."""
    return ("edgespec reproduce " + " ".join(shlex.quote(a) for a in sys.argv[2:])).strip()


def run(args: argparse.Namespace) -> int:
    """Run the claims of the paper ``args.seed`` names."""
    if PAPERS[args.seed].one_process and args.workers != 1:
        raise UserInputError(f"--workers {args.workers}: {args.seed} runs in one process (its "
                             "models load once); leave --workers out")  # fmt: skip
    check_workers(args.workers)
    out = run_folder(args.seed, args.out, args.overwrite)  # refused before anything loads
    reproduce: Reproduce = importlib.import_module(PAPERS[args.seed].claims).reproduce
    import torch

    torch.set_num_threads(1)  # this command owns its process; its MLPs are tiny
    with made_run_folder(out, claimed=args.out is None):  # a failed run's new folder goes
        reproduce(
            out,
            quick=args.quick,
            workers=args.workers,
            progress=not args.quiet,
            command=command_line(),
        )
    return 0
