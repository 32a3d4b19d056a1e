"""A calibration's folder: claimed so that it holds one calibration's files
(:func:`calibration_folder`), and the partial profile a calibration stopped while profiling
keeps there (:data:`PARTIAL`), which the same command with ``--resume`` goes on with.

The fresh profile's measurements are appended to ``profile-samples.jsonl`` as each
configuration (and each draft batch cell) is timed (the checkpoint of ``edgespec profile``,
:mod:`edgespec.profiling.checkpoint`); it is deleted once the profile is written, so the
file on disk always means a profile left unfinished. A folder holding it is refused
without ``--resume`` (go on) or ``--overwrite`` (start over): a new run would otherwise
throw its measurements away."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from edgespec.errors import UserInputError
from edgespec.output_paths import claim_folder
from edgespec.profiling.files import profile_files

_PROFILE = profile_files(Path("profile.yaml"))

PARTIAL = _PROFILE.samples.name
"""The partial profile's file in the folder (``profile-samples.jsonl``)."""

RUN_FILES = (*(path.name for path in _PROFILE.finished), PARTIAL, "trace.jsonl", "comparison.md")
"""What a calibration writes into its folder (``write_profiles``' files for profile.yaml,
the partial profile while it measures, the real run's trace, the comparison)."""


def check_resume(args: argparse.Namespace) -> None:
    """``--resume`` goes on in the ``--out`` folder of a calibration stopped while
    profiling: it needs ``--out``, and takes neither ``--profile`` (a finished profile, so
    nothing to go on with) nor ``--overwrite`` (which would remove what it goes on with)."""
    if not args.resume:
        return
    if args.out is None:
        raise UserInputError(
            "--resume needs --out: the folder of the calibration stopped while profiling"
        )
    clash = "--resume goes on with the partial profile in --out"
    if args.profile is not None:
        raise UserInputError(f"{clash}; --profile reads a finished one: give one of them")
    if args.overwrite:
        raise UserInputError(f"{clash}; --overwrite would remove it: give one of them")


def calibration_folder(args: argparse.Namespace, remove: bool = True) -> Path:
    """``--out`` holding no earlier calibration (or ``--overwrite``: its files removed but
    for the ``--profile`` given and its siblings, :func:`profile_files`: its draft's, its
    report; ``remove=False``: only checked), else a new ``runs/calibration-<time>``; with
    ``--resume``, ``--out`` holding a partial profile and nothing else of a calibration."""
    keep: tuple[Path, ...] = ()
    if args.profile is not None:
        keep = profile_files(Path(args.profile)).finished
    if args.out is not None:
        partial = args.out / PARTIAL
        if args.resume and not partial.is_file():
            raise UserInputError(
                f"--resume: --out {args.out} holds no partial profile ({PARTIAL}): a "
                "calibration stopped while profiling keeps one there"
            )
        if args.resume:
            keep = (*keep, partial)
        elif partial.is_file() and not args.overwrite:
            from edgespec.profiling.checkpoint import num_measured

            raise UserInputError(
                f"--out {args.out} holds the partial profile of a calibration stopped while "
                f"profiling ({PARTIAL}, {num_measured(partial)} configurations measured): add "
                "--resume to go on with it, or --overwrite to start over"
            )
    default = Path("runs") / f"calibration-{time.strftime('%Y%m%d-%H%M%S')}"
    return claim_folder(args.out, default, RUN_FILES, args.overwrite, keep, remove)
