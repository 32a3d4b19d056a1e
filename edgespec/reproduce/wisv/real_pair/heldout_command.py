"""``edgespec reproduce wisv-heldout``: the shipped WISV default's held-out check
(:mod:`edgespec.reproduce.wisv.real_pair.heldout`), or a candidate head's with ``--head``.

    edgespec reproduce wisv-heldout --out runs/wisv                  # the shipped head
    edgespec reproduce wisv-heldout --head H-head.json --prompts 6 --out runs/h  # a candidate
    edgespec reproduce wisv-heldout --lossy-prompts 6 --out runs/w  # T > 0 on 6 prompts only

A rerun into the same ``--out`` continues a check of the same plan; another plan's check,
or another reproduction's files, are refused unless ``--overwrite``
(:mod:`~edgespec.reproduce.wisv.real_pair.heldout_folder`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from edgespec.argument_types import positive_int
from edgespec.errors import UserInputError
from edgespec.output_paths import writable_output_folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick", action="store_true", help="2 prompts at T = 12 (CI) (default: the full check)"
    )
    parser.add_argument(
        "--out",
        type=writable_output_folder,
        default=None,
        help="output folder; a rerun of the same plan continues it "
        "(default runs/reproduce-wisv-heldout-<time>)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="--out may hold an earlier check of another plan or another reproduction: the "
        "files this check writes are removed first (default: a check of the same plan is "
        "continued, anything else refused)",
    )
    parser.add_argument(
        "--head",
        type=Path,
        default=None,
        help="a decision head (*-head.json) to check in place of the shipped one "
        "(default: edgespec/data/wisv/gemma3-270m-head.json)",
    )
    parser.add_argument(
        "--prompts",
        type=positive_int,
        default=None,
        help="only the first N prompts of the check (default: all, 50; --quick 2)",
    )
    parser.add_argument(
        "--lossy-prompts",
        type=positive_int,
        default=None,
        help="run the thresholds above 0 on the first N prompts only (default: all)",
    )


def run(args: argparse.Namespace) -> int:
    from edgespec.reproduce.command import command_line
    from edgespec.reproduce.wisv.real_pair.heldout import reproduce
    from edgespec.runtime.server.semantic import load_semantic_head

    if args.head is not None:
        try:
            load_semantic_head(args.head)
        except ValueError as exc:
            raise UserInputError(f"--head: {exc}") from None
    reproduce(
        args.out,  # claimed, or continued when it holds a check of this plan
        quick=args.quick,
        command=command_line(),
        head=args.head,
        prompts=args.prompts,
        lossy_prompts=args.lossy_prompts,
        overwrite=args.overwrite,
    )
    return 0
