"""``edgespec profile``'s refusals before any model loads or anything is measured
(:mod:`edgespec.profiling.command`): flags out of range (:func:`check_args`), an ``--out``
that already holds a profile (:func:`check_out`), ``--draft-batches`` read
(:func:`draft_batches`), and a checkpoint found without
``--resume`` or ``--fresh`` or resumed with other settings (:func:`read_checkpoint`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from edgespec.hardware.profile_source import PROFILE_SUFFIXES
from edgespec.models.devices import device_placement
from edgespec.policies.params import MAX_GAMMA
from edgespec.profiling.files import profile_files

MAX_BOOTSTRAP = 100_000
"""The most ``--bootstrap`` resamples: their refits are held at once, after the measuring."""
DRAFT_BATCHES = (1, 2, 4, 8)
"""The batch sizes a model drafter is timed at (``--quick``: :data:`QUICK_DRAFT_BATCHES`)."""
QUICK_DRAFT_BATCHES = (1, 2, 4)
MAX_DRAFT_BATCH = 64
"""The largest ``--draft-batches`` size: each is b sessions' contexts drafted at once."""
MAX_NUM_DRAFT_BATCHES = 8


def draft_batches(text: str) -> tuple[int, ...]:
    """``--draft-batches``: distinct sizes in [1, :data:`MAX_DRAFT_BATCH`], comma-separated,
    at most :data:`MAX_NUM_DRAFT_BATCHES` of them; ascending."""
    parts = text.split(",", MAX_NUM_DRAFT_BATCHES)  # bounded, however long the text
    if len(parts) > MAX_NUM_DRAFT_BATCHES:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_NUM_DRAFT_BATCHES} batch sizes, got more in {text:.60}"
        )
    sizes = []
    for part in parts:
        word = part.strip()
        number = int(word) if len(word) <= 3 and word.isascii() and word.isdigit() else 0
        if not 1 <= number <= MAX_DRAFT_BATCH:
            raise argparse.ArgumentTypeError(
                f"each batch size must be an integer in [1, {MAX_DRAFT_BATCH}], got {word!r:.30}"
            )
        if number in sizes:
            raise argparse.ArgumentTypeError(f"batch size {number} is given twice")
        sizes.append(number)
    return tuple(sorted(sizes))


def check_args(args: argparse.Namespace) -> str | None:
    """An error message for bad arguments, or None."""
    if args.target is None:
        return "--target is required (or --residuals REPORT)"
    if not str(args.out).endswith(PROFILE_SUFFIXES):
        return f"--out must end in .yaml or .yml, got {str(args.out)!r}"
    for name, limit in (("gamma", MAX_GAMMA), ("bootstrap", MAX_BOOTSTRAP)):
        if not 1 <= getattr(args, name) <= limit:
            return f"--{name} must be in [1, {limit:,}], got {getattr(args, name)}"
    if not 0 < args.scale <= 1:
        return f"--scale must be in (0, 1], got {args.scale}"
    if args.resume and args.fresh:
        return "--resume and --fresh exclude each other"
    if args.draft_batches is not None and args.draft in (None, "ngram"):
        return (
            "--draft-batches times a draft model batched, as the drafting server runs it: "
            "give --draft MODEL (ngram has no model)"
        )
    if args.clock == "cpu" and args.device not in (None, "cpu"):
        return (
            f"--clock cpu times this process's CPU work, not --device {args.device}'s: "
            "use --clock wall"
        )
    if args.clock == "cpu" and args.threads > 1:
        return (
            f"--clock cpu sums the CPU time of all --threads {args.threads} threads, so a "
            "pass would read about that many times its latency: give --threads 1 with "
            "--clock cpu"
        )
    return None


def check_out(out: Path, overwrite: bool) -> str | None:
    """An error message for an ``--out`` whose profile, or any sibling a profile run
    writes (:attr:`ProfileFiles.finished`), is already there without ``overwrite``: an
    earlier run's draft left beside this run's target would be read as this run's.
    ``None`` when there is none, or with ``overwrite`` (the run then replaces them)."""
    found = [path.name for path in profile_files(out).finished if path.exists()]
    if not found or overwrite:
        return None
    return (
        f"--out {out} already holds a profile ({', '.join(found)}); give another --out, "
        "or --overwrite to replace that profile's files"
    )


def read_checkpoint(args: argparse.Namespace, spec: Any) -> Any:
    """The checkpoint to resume, or None. A checkpoint exists only while its profile is
    unfinished (it is deleted once the files are written), so one found without --resume
    or --fresh is an error rather than silently overwritten, and --resume without one
    too (as ``calibrate --resume`` is); raises CheckpointError with the message to print."""
    from edgespec.profiling.checkpoint import (
        CheckpointError,
        checkpoint_path,
        load_checkpoint,
        num_measured,
        setup_of,
    )

    path = checkpoint_path(Path(args.out))
    if args.resume and not path.exists():  # it ran a whole new profile, "resuming: 0 of N"
        raise CheckpointError(
            f"--resume: no unfinished profile to continue ({path} does not exist): give the "
            "--out the stopped profile writes, or leave --resume out"
        )
    if not path.exists() or args.fresh:
        return None
    if not args.resume:
        raise CheckpointError(
            f"{path} holds an unfinished profile ({num_measured(path)} configurations "
            "measured): add --resume to continue it, or --fresh to start over"
        )
    placement = device_placement(args)
    setup = setup_of(args.target, spec, args.threads, placement.device, placement.dtype)
    return load_checkpoint(path, setup)
