"""`edgespec trace`'s flags checked, and its prompt sets read, before any model loads: a
bad number, ``--slo-classes`` list or ``--dataset`` file is one line naming the flag (and
the file and line), not a traceback after minutes of loading."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from edgespec.datasets.prompts import DATASETS, HELD_OUT
from edgespec.errors import UserInputError

NGRAM = "ngram"

MAX_DRAFT_TOKENS = 64
"""The most tokens one block may hold: what the in-process verifier that traces run
through takes (:class:`edgespec.runtime.wire.inprocess.LocalVerifier`'s default), so
``--gamma`` and ``--tree-max-nodes`` above it are refused before any model loads."""


def slo_classes(text: str) -> tuple[str, ...]:
    """``--slo-classes``' names, comma-separated (spaces around a name are dropped); an
    empty name, or none at all, is a :class:`ValueError`."""
    names = tuple(name.strip() for name in text.split(","))
    if not any(names):
        raise ValueError(f"give at least one class name, got {text!r}")
    if not all(names):
        raise ValueError(f"an empty class name in {text!r} (names are comma-separated)")
    return names


def check_args(args: argparse.Namespace) -> str | None:
    """The first problem with the flags, or None."""
    if args.out is None and args.out_dir is None:
        return "give --out FILE and/or --out-dir DIR"
    for flag in ("gamma", "limit", "max_new_tokens", "num_drafters", "threads"):
        if getattr(args, flag) < 1:
            return f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}"
    if args.max_prompt_tokens < 2:
        return f"--max-prompt-tokens must be >= 2, got {args.max_prompt_tokens}"
    if args.gamma > MAX_DRAFT_TOKENS:
        return (
            f"--gamma must be <= {MAX_DRAFT_TOKENS} (the most tokens a block "
            f"holds), got {args.gamma}"
        )
    if not (math.isfinite(args.rate) and args.rate > 0 and math.isfinite(1000.0 / args.rate)):
        return f"--rate must be a finite number > 0, got {args.rate}"
    try:
        slo_classes(args.slo_classes)
    except ValueError as exc:
        return f"--slo-classes: {exc}"
    if args.tree is not None:
        from edgespec.core.tree import parse_branching

        if args.draft == NGRAM:
            return "--tree needs a neural draft model (ngram drafts chains)"
        try:
            depths = len(parse_branching(args.tree))
        except ValueError as exc:
            return f"--tree: {exc}"
        if (problem := _tree_too_deep(args, depths)) is not None:
            return problem
    if args.stop_predictor is not None and (args.draft == NGRAM or args.tree is not None):
        return "--stop-predictor needs a neural chain draft (not ngram, not --tree)"
    return _temperature_problem(args) or _tree_limits(args)


def _temperature_problem(args: argparse.Namespace) -> str | None:
    """``--temperature``: a temperature the runtime samples at, its cuts given with it."""
    from edgespec.core.types import SamplingParams

    try:
        SamplingParams(temperature=args.temperature, **given_cuts(args))
    except ValueError as exc:
        return f"--{str(exc).replace('_', '-', 1)}"
    if args.temperature == 0 and given_cuts(args):
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in given_cuts(args))
        return f"{flags}: a cut of a sampled row; give --temperature > 0"
    return None


def _tree_too_deep(args: argparse.Namespace, depths: int) -> str | None:
    """A ``--tree`` with more depths than a round's largest γ (``--gamma``; a dynamic
    window's ``max(--gamma, 8)``), whose extra depths would never be drafted, or None."""
    if args.window == "dynamic":
        from edgespec.learn.traces.settings import DYNAMIC_MAX_GAMMA

        deepest = max(args.gamma, DYNAMIC_MAX_GAMMA)
        if depths > deepest:
            return (f"--tree {args.tree} has {depths} depths, more than --window dynamic's "
                    f"largest γ {deepest} (--gamma {args.gamma}, or {DYNAMIC_MAX_GAMMA} if "
                    "larger)")  # fmt: skip
    elif depths > args.gamma:
        return f"--tree {args.tree} has {depths} depths, more than --gamma {args.gamma}"
    return None


def _tree_limits(args: argparse.Namespace) -> str | None:
    """``--tree-max-nodes`` and ``--tree-min-prob``: in range, and given with ``--tree``
    only (without it they would change nothing)."""
    for flag in ("tree_max_nodes", "tree_min_prob"):
        if args.tree is None and getattr(args, flag) is not None:
            return f"--{flag.replace('_', '-')} shapes a token tree: it needs --tree"
    if args.tree_max_nodes is not None and not 1 <= args.tree_max_nodes <= MAX_DRAFT_TOKENS:
        return (
            f"--tree-max-nodes must be in [1, {MAX_DRAFT_TOKENS}] (the most tokens a block "
            f"holds), got {args.tree_max_nodes}"
        )
    if args.tree_min_prob is not None and not 0.0 <= args.tree_min_prob < 1.0:
        return f"--tree-min-prob must be in [0, 1), got {args.tree_min_prob}"
    return None


def prompt_sets(args: argparse.Namespace) -> list[tuple[str, list[Any]]]:
    """(name, up to ``--limit`` prompts) per ``--dataset``: a bundled set, or a JSONL file
    whose every line holds a string ``prompt`` (read as is). A file that is not, or that
    holds no prompt, is a :class:`UserInputError` naming it (and the line)."""
    from edgespec.datasets.prompts import load_jsonl_prompts, load_prompts

    sets: list[tuple[str, list[Any]]] = []
    given: dict[str, str] = {}  # set name -> the --dataset that named it
    for name in args.dataset or ["gsm8k"]:
        if name in DATASETS + HELD_OUT:
            try:
                prompts = load_prompts(name, args.split, args.limit)
            except ValueError as exc:  # 'general' has no train split
                raise UserInputError(f"--dataset {name} --split {args.split}: {exc}") from None
            label = name
        else:
            path = Path(name)
            if not path.is_file():
                raise UserInputError(
                    f"--dataset {name}: neither a bundled dataset "
                    f"({', '.join(DATASETS + HELD_OUT)}) "
                    "nor a JSONL prompt file"
                )
            try:
                prompts = load_jsonl_prompts(path, path.stem, template="raw")[: args.limit]
            except ValueError as exc:
                raise UserInputError(f"--dataset {exc}") from exc
            label = path.stem
        if not prompts:
            raise UserInputError(f"--dataset {name}: holds no prompts")
        if label in given:  # one name: its records' request ids and --out-dir file clash
            twice = (
                "given twice"
                if given[label] == name
                else f"named {label} as --dataset {given[label]} is"
            )
            why = "a set's name begins its request ids and names its --out-dir file"
            raise UserInputError(f"--dataset {name}: {twice}: {why}; give each set once")
        given[label] = name
        sets.append((label, prompts))
    return sets


def check_outputs(args: argparse.Namespace, labels: list[str]) -> None:
    """Without ``--overwrite``, an ``--out`` file, or an ``--out-dir`` file of one of the
    datasets ``labels``, that exists and is not empty is a :class:`UserInputError` naming
    the flag and the file: an earlier trace is never replaced unawares (as ``edgespec
    profile`` and ``calibrate`` refuse an ``--out`` holding an earlier run). Two outputs
    at one path (``--json`` at ``--out``, ``--out`` at ``--out-dir`` or at one of its
    files) are refused whatever ``--overwrite`` says: the second would replace the first."""
    _check_distinct_outputs(args, labels)
    if args.overwrite:
        return
    given = [("--out", args.out)] if args.out is not None else []
    if args.out_dir is not None:
        given += [("--out-dir", args.out_dir / f"{label}.jsonl") for label in labels]
    for flag, path in given:
        if path.is_file() and path.stat().st_size > 0:
            held = "a trace" if _starts_a_trace(path) else "other data (not a trace)"
            raise UserInputError(
                f"{flag}: {path} already holds {held}; give another {flag}, or --overwrite "
                "to replace it"
            )


def _check_distinct_outputs(args: argparse.Namespace, labels: list[str]) -> None:
    """Every output at a path of its own (:func:`check_outputs`)."""
    from edgespec.output_paths import check_distinct_outputs

    outputs: list[tuple[str, Path | None]] = [("--out", args.out)]
    if args.out_dir is not None:
        if args.out is not None and args.out.resolve() == args.out_dir.resolve():
            raise UserInputError(f"--out {args.out} is --out-dir's folder: give a file "
                                 "outside it")  # fmt: skip
        outputs += [("--out-dir", args.out_dir / f"{label}.jsonl") for label in labels]
    for flag, path in outputs:  # --out's is refused as it is parsed; a set's file here
        if path is not None and path.is_dir():
            raise UserInputError(f"{flag}: {path} is a folder where this trace writes a file; "
                                 "move it or give another")  # fmt: skip
    check_distinct_outputs(*outputs, ("--json", args.json))


def _starts_a_trace(path: Path) -> bool:
    """Whether ``path``'s first line is a trace record's start (its ``request_id`` first)."""
    with path.open("rb") as file:
        return file.read(len(b'{"request_id":')) == b'{"request_id":'


def given_cuts(args: argparse.Namespace) -> dict[str, Any]:
    """The cuts given on the command line (``--top-k``, ``--top-p``, ``--min-p``)."""
    from edgespec.sim.setup.trace_fields import SAMPLING_CUTS

    return {n: getattr(args, n) for n in SAMPLING_CUTS if getattr(args, n) is not None}


def sampled_title(args: argparse.Namespace) -> str:
    """How a sampled capture sampled: ``sampled at T = 0.8, top-k 40``."""
    cuts = "".join(
        f", {name.replace('_', '-')} {value:g}" for name, value in given_cuts(args).items()
    )
    return f"sampled at T = {args.temperature:g}{cuts}"
