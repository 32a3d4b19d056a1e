"""``edgespec calibrate``'s refusals before anything loads or runs, and before its folder
is claimed or made (:mod:`edgespec.calibration.command`): sizes it cannot run
(:func:`check_counts`), a pair it cannot build (:func:`check_pair_names`) and a
``--profile`` whose files the simulated run could not read, or that is no .yaml or .yml
file: a bundled preset, which has no draft profile beside it, among them
(:func:`check_profiles`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from edgespec.errors import UserInputError
from edgespec.hardware.presets import available
from edgespec.hardware.profile_source import (
    PROFILE_PRESETS,
    PROFILE_SUFFIXES,
    not_a_profile_file,
)
from edgespec.profiling.files import profile_files

MAX_REQUESTS = 1_000
"""The most requests a calibration runs (``--clients`` × ``--requests``): one small scenario,
its prompts built before it starts."""

SYNTHETIC_DRAFTS = ("truncated", "ngram")
"""The drafts the synthetic target takes: its first layers, or the prompt-lookup drafter."""

DEFAULT_PROMPT_TOKENS = 32
"""The synthetic target's prompt length (``--prompt-tokens``): random tokens."""

DEFAULT_DATASET = "gsm8k"
"""A model target's prompt set (``--dataset``), its test split."""


def check_counts(args: argparse.Namespace) -> None:
    """Refuse more than :data:`MAX_REQUESTS` requests, a ``--gamma`` over the calibration
    server's ``max_draft_tokens``, or one new token (no TPOT)."""
    from edgespec.runtime.server.config import ServerConfig

    if args.max_new_tokens < 2:
        raise UserInputError(
            f"--max-new-tokens {args.max_new_tokens}: at least 2 (TPOT is the time between "
            "output tokens)"
        )
    total = args.clients * args.requests
    if total > MAX_REQUESTS:
        raise UserInputError(
            f"--clients {args.clients} x --requests {args.requests} = {total:,} requests; "
            f"a calibration runs at most {MAX_REQUESTS:,}"
        )
    limit = ServerConfig().max_draft_tokens
    if args.gamma > limit:
        raise UserInputError(
            f"--gamma {args.gamma}: at most {limit} (the calibration server's max_draft_tokens)"
        )


def check_pair_names(args: argparse.Namespace) -> None:
    """``--target`` and ``--draft`` resolved to models (nothing is loaded), the refusal
    naming the flag; the synthetic target takes only :data:`SYNTHETIC_DRAFTS` (it builds
    its draft; a model named would be ignored) and no ``--dataset``, a model target a known
    ``--dataset`` and no ``--prompt-tokens`` (each would be ignored)."""
    from edgespec.models.registry import ModelNotFoundError, resolve_model

    if args.target == "synthetic":
        if args.draft not in SYNTHETIC_DRAFTS:
            raise UserInputError(
                f"--draft {args.draft}: the synthetic target takes 'truncated' or 'ngram' "
                "(a model draft needs a model --target)"
            )
        if args.dataset is not None:
            raise UserInputError(
                f"--dataset {args.dataset}: the synthetic target's prompts are random tokens "
                "(--prompt-tokens); a dataset needs a model --target"
            )
        return
    _check_dataset(args)
    names = [("--target", args.target), ("--draft", args.draft)]
    for flag, name in names[: 1 if args.draft == "ngram" else 2]:
        try:
            resolve_model(name)
        except ModelNotFoundError as exc:
            raise UserInputError(f"{flag} {name}: {exc}") from None


def _check_dataset(args: argparse.Namespace) -> None:
    """A model target's prompts: a known ``--dataset``, and no ``--prompt-tokens`` (which
    sizes only the synthetic target's random prompts)."""
    from edgespec.datasets.prompts import DATASETS, HELD_OUT

    if args.prompt_tokens is not None:
        raise UserInputError(
            f"--prompt-tokens {args.prompt_tokens}: a model target's prompts come from "
            f"--dataset (default {DEFAULT_DATASET}); --prompt-tokens sizes the synthetic "
            "target's"
        )
    known = (*DATASETS, *HELD_OUT)
    if args.dataset is not None and args.dataset not in known:
        raise UserInputError(
            f"--dataset {args.dataset}: unknown; known datasets are {', '.join(known)}"
        )


def check_profiles(args: argparse.Namespace) -> tuple[Path, Path] | None:
    """The target's and the draft's profile the simulated run reads (``--profile`` and the
    draft's beside it, :func:`profile_files`), each loaded as the simulator loads it; a
    file missing or bad is refused naming ``--profile`` and that file, and so is a
    ``--profile`` not ending in .yaml or .yml (:func:`_not_a_profile_file`), and a profile
    of a kind other than ``wisp`` (the simulated run's). ``None`` without ``--profile``."""
    from edgespec.config import ConfigError
    from edgespec.hardware.cost_models import PROFILE_KINDS, load_profile

    if args.profile is None:
        return None
    target = Path(args.profile)
    if target.suffix not in PROFILE_SUFFIXES:
        raise UserInputError(f"--profile {args.profile}: {_not_a_profile_file(args.profile)}")
    draft = profile_files(target).draft
    for path, note in ((target, ""), (draft, " (the draft's profile, read beside --profile)")):
        try:
            kind = PROFILE_KINDS[type(load_profile(str(path)))]
        except ConfigError as exc:  # where: the file (and line or field), else the path
            where = exc.path if exc.path.startswith(str(path)) else str(path)
            raise UserInputError(
                f"--profile {args.profile}: {where}: {exc.message}{note}"
            ) from None
        if kind != "wisp":
            raise UserInputError(
                f"--profile {args.profile}: {path}: a {kind!r} profile{note}; the simulated "
                "run prices with 'wisp' profiles, as edgespec profile writes them"
            )
    return target, draft


def _not_a_profile_file(text: str) -> str:
    """Why ``--profile`` ``text`` (not ending in .yaml or .yml) is refused: a bundled
    preset is paired with no draft profile (none is bundled as ``NAME-draft``, which is
    where a file's is read: beside it), so the pair is named by files; anything else is
    refused for what it is (no such file, a folder, another suffix), as the simulator
    refuses it (:func:`~edgespec.hardware.profile_source.not_a_profile_file`)."""
    if text in available(PROFILE_PRESETS):
        return (
            "a bundled preset, and no draft profile is paired with one (there is no "
            f"{text}-draft); give a profile file, DIR/NAME.yaml, with the draft's beside it "
            "as DIR/NAME-draft.yaml (edgespec profile --out DIR/NAME.yaml writes both)"
        )
    return not_a_profile_file(Path(text))
