"""``edgespec calibrate``'s refusals before anything loads or runs, and before its folder
is claimed or made (:mod:`edgespec.calibration.command`): sizes it cannot run
(:func:`check_counts`), a pair it cannot build (:func:`check_pair_names`) and a
``--profile`` whose files the simulated run could not read, or that is no .yaml or .yml
file: a bundled preset, which has no draft profile beside it, among them
(:func:`check_profiles`), or whose files record another pair than the run's
(:func:`check_profile_models`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
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

SYNTHETIC = "synthetic"
"""The ``--target`` built in memory (:func:`edgespec.calibration.command._pair`), the
default: a name a profile calibrate made of it records, as it does its draft's."""

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
    its draft; a model named would be ignored) and no ``--dataset``, a model target a model
    or ``ngram`` draft (not the default ``truncated``, said as the default), a known
    ``--dataset`` and no ``--prompt-tokens`` (each would be ignored)."""
    from edgespec.models.registry import ModelNotFoundError, resolve_model

    if args.target == SYNTHETIC:
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
    for flag, name in names[: 1 if args.draft in SYNTHETIC_DRAFTS else 2]:
        try:
            resolve_model(name)
        except ModelNotFoundError as exc:
            raise UserInputError(f"{flag} {name}: {exc}") from None
    if args.draft == "truncated":
        raise UserInputError(
            "--draft truncated (the default) is the synthetic target's first layers: a model "
            "--target needs --draft MODEL or ngram"
        )


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


_DRAFT_NOTE = " (the draft's profile, read beside --profile)"
"""What a refusal about the ``-draft`` file says of it."""


@dataclass(frozen=True, slots=True)
class GivenProfile:
    """A ``--profile`` the run reads instead of profiling: the target's file, the draft's
    beside it, and the models they record (``--target``'s and ``--draft``'s)."""

    target: Path
    draft: Path
    target_model: str
    draft_model: str

    def line(self) -> str:
        """What stdout and ``comparison.md`` say of it, where a fresh profile's summary
        is (:func:`edgespec.calibration.fresh_profile.profile_summary`)."""
        return (
            f"profile: read from --profile {self.target} and {self.draft} (of "
            f"{self.target_model} + {self.draft_model}); not profiled in this run"
        )

    def range_warnings(self, clients: int, max_context_tokens: int) -> tuple[str, ...]:
        """:func:`~edgespec.hardware.profile_info.range_warning` of each file for this run:
        the server's batches of up to ``clients`` requests, each drafter's of one, both at
        contexts of up to ``max_context_tokens`` (the longest prompt plus the output)."""
        from edgespec.hardware.profile_info import profile_info, range_warning

        found = (
            range_warning(profile_info(str(self.target)), clients, max_context_tokens),
            range_warning(profile_info(str(self.draft)), 1, max_context_tokens),
        )
        return tuple(line for line in found if line is not None)


def check_profiles(args: argparse.Namespace) -> GivenProfile | None:
    """The target's and the draft's profile the simulated run reads (``--profile`` and the
    draft's beside it, :func:`profile_files`), each loaded as the simulator loads it; a
    file missing or bad is refused naming ``--profile`` and that file, and so is a
    ``--profile`` not ending in .yaml or .yml (:func:`_not_a_profile_file`), a profile
    of a kind other than ``wisp`` (the simulated run's), and one of another model than
    ``--target`` (the draft's: ``--draft``), :func:`check_profile_models`. ``None``
    without ``--profile``."""
    from edgespec.config import ConfigError
    from edgespec.hardware.cost_models import PROFILE_KINDS, load_profile

    if args.profile is None:
        return None
    target = Path(args.profile)
    if target.suffix not in PROFILE_SUFFIXES:
        raise UserInputError(f"--profile {args.profile}: {_not_a_profile_file(args.profile)}")
    draft = profile_files(target).draft
    for path, note in ((target, ""), (draft, _DRAFT_NOTE)):
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
    return check_profile_models(args, target, draft)


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


def check_profile_models(args: argparse.Namespace, target: Path, draft: Path) -> GivenProfile:
    """The models ``--profile``'s files record (``model:``, the name edgespec profile or
    calibrate was given), each that of the run: the target's ``--target``, the draft's
    ``--draft``, compared as the models the names resolve to (:func:`_model_identity`:
    ``gemma3-270m-draft`` and the bundled draft's folder are one model); a file recording
    none, or another model, is refused naming both (the simulated run would price
    another pair)."""
    from edgespec.hardware.profile_source import profile_mapping

    found: list[str] = []
    pairs = ((target, "", "--target", args.target), (draft, _DRAFT_NOTE, "--draft", args.draft))
    for path, note, flag, name in pairs:
        where = f"--profile {args.profile}: {path}"
        model = profile_mapping(str(path))[0].get("model")
        if not isinstance(model, str):
            raise UserInputError(
                f"{where} records no model name (model:){note}, so it may be another "
                "pair's; give this pair's profile, or omit --profile to profile it here"
            )
        recorded = _model_identity(model)
        if model != name and (recorded is None or recorded != _model_identity(name)):
            unknown = " (no such model from here)" if recorded is None else ""
            raise UserInputError(
                f"{where} records model {model}{unknown}, not {flag} {name}{note}; give "
                "this pair's profile, or omit --profile to profile it here"
            )
        found.append(model)
    return GivenProfile(target, draft, found[0], found[1])


def _model_identity(name: str) -> str | None:
    """The model ``name`` is, however spelled: a name calibrate builds or runs itself
    (:data:`SYNTHETIC`, :data:`SYNTHETIC_DRAFTS`) as it is, a known model's name, a
    directory or file as its absolute path (a relative one from this folder); ``None``
    for a name that is no model from here."""
    from edgespec.models.registry import ModelNotFoundError, model_identity

    if name in (SYNTHETIC, *SYNTHETIC_DRAFTS):
        return name
    try:
        return model_identity(name)
    except ModelNotFoundError:
        return None
