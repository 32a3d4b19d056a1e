"""``edgespec train wisv``'s flags (:func:`add_arguments`) and their value types,
each refused as the flags are parsed, naming the flag: ``--width`` (:func:`head_width`),
``--validation`` (:func:`validation_share`), ``--dropout`` (:func:`dropout_probability`)
and ``--out-dir``, a folder that must take a file now
(:func:`edgespec.output_paths.writable_output_folder`) and hold no head of the same name
unless ``--overwrite`` (:func:`check_head_files`).
:mod:`edgespec.learn.wisv.command` reads them into a
:class:`~edgespec.learn.wisv.fit.FitConfig`."""

from __future__ import annotations

import argparse
from pathlib import Path

from edgespec.argument_types import non_negative_float, positive_int
from edgespec.arguments import TrainingOptions, add_seed, add_threads, add_training_arguments
from edgespec.learn.finished import add_overwrite, check_files_replaceable
from edgespec.learn.settings_checks import MAX_WIDTH, width_flag
from edgespec.learn.wisv.union import LABELS
from edgespec.output_paths import writable_output_folder
from edgespec.policies.semantic.relabel import BUDGETS, DEFAULT_BUDGET

DEFAULT_PATIENCE = 10
"""``wisv --patience`` when ``--validation`` is given without it."""

head_width = width_flag("the head's file grows with its width")
"""``wisv --width``: an integer in ``[1, MAX_WIDTH]``."""


def validation_share(text: str) -> float:
    """``wisv --validation``: a share of the training prompts in ``[0, 1)`` (0: none)."""
    return _below_one(text, "a share of the training prompts; 0: none")


def dropout_probability(text: str) -> float:
    """``wisv --dropout``: the probability of zeroing a hidden unit in training, in
    ``[0, 1)`` (at 1 the head learns nothing)."""
    return _below_one(text, "the probability of dropping a hidden unit in training")


def _below_one(text: str, meaning: str) -> float:
    """A finite number in ``[0, 1)``; the refusal says what it is (``meaning``)."""
    value = non_negative_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1) ({meaning}), got {value:g}")
    return value


def head_name(text: str) -> str:
    """``wisv --name``: a file name stem, not a path (was: ``--name ../x`` wrote the head's
    files outside ``--out-dir``)."""
    if text in ("", ".", "..") or "/" in text or "\\" in text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a file name stem: give a name without '/' (the files go in --out-dir)"
        )
    return text


def default_head_name(target: object) -> str:
    """The stem of a head named by its captures' ``target``: a known name as it is, a
    model folder or ``.gguf`` file by its last part (was: the whole path, so an absolute one
    wrote the files beside the model, outside ``--out-dir``)."""
    name = Path(str(target)).name
    name = name.removesuffix(".gguf") if name != ".gguf" else name
    return name if name not in ("", ".", "..") else "head"


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``wisv`` to ``edgespec train``'s subcommands."""
    t = sub.add_parser("wisv", help="relabel with CSI draws and train the WISV decision head")
    t.add_argument(
        "--data",
        type=Path,
        action="append",
        required=True,
        help="a wisv-data .npz file; repeat to train on several (a prompt of one dataset "
        "is held out in all of them together)",
    )
    t.add_argument(
        "--out-dir", type=writable_output_folder, required=True, help="write the three files here"
    )
    t.add_argument(
        "--baseline-head",
        type=Path,
        help="also report this head's metrics on the same train and held-out instances",
    )
    t.add_argument(
        "--labels",
        choices=LABELS,
        default="base",
        help="a rollout capture's labels: base (against the target-only output) or local "
        "(accepting against rejecting on the same prefix) (default base)",
    )
    t.add_argument(
        "--name",
        type=head_name,
        default=None,
        help="file name stem (default: the dataset's target name, a model path's last part)",
    )
    t.add_argument(
        "--budget",
        choices=tuple(BUDGETS),
        default=DEFAULT_BUDGET,
        help=f"the relabelling's repair budget (default {DEFAULT_BUDGET}: no critical "
        "mismatch relaxed, the base labels; kappa-critical: B = κ·n_critical, files end in "
        "-kappa-critical)",
    )
    t.add_argument("--draws", type=positive_int, default=8, help="CSI draws per prompt (default 8)")
    t.add_argument(
        "--width",
        type=head_width,
        default=64,
        help=f"hidden width, at most {MAX_WIDTH} (default 64)",
    )
    t.add_argument(
        "--dropout",
        type=dropout_probability,
        default=0.1,
        help="the head's dropout probability, in [0, 1) (default 0.1)",
    )
    t.add_argument(
        "--validation",
        type=validation_share,
        default=0.0,
        help="share of the training prompts set aside for early stopping on their AUC "
        "(default 0: none, all epochs)",
    )
    t.add_argument(
        "--patience",
        type=positive_int,
        default=None,
        help="with --validation: stop after this many epochs without a better validation "
        f"AUC and keep the best epoch's weights (default {DEFAULT_PATIENCE})",
    )
    add_training_arguments(
        t,
        defaults=TrainingOptions(100, 1e-3, 1e-2, 256, 0.25),
        helps={"batch_size": "instances per step", "holdout": "share of prompts held out"},
    )
    t.add_argument(
        "--digits",
        type=positive_int,
        default=6,
        help="significant digits of the saved weights (default 6)",
    )
    add_threads(t, 1)
    add_seed(t, "the split, CSI draws, init and batches")
    add_overwrite(t, "a head of the same name already in --out-dir (its three files)")


HEAD_FILES = ("head", "acceptance", "metrics")
"""The files ``train wisv`` writes into ``--out-dir``: ``STEM-head.json`` and so on."""


def check_head_files(out_dir: Path, stem: str, overwrite: bool) -> None:
    """Refuse, unless ``overwrite``, an ``--out-dir`` already holding a file of the head
    named ``stem`` (:func:`~edgespec.learn.finished.check_files_replaceable`): checked as
    the flags are parsed where ``--name`` gives the stem, else once the data's target
    does, before training."""
    names = [f"{stem}-{kind}.json" for kind in HEAD_FILES]
    what = f"a head named {stem}"
    check_files_replaceable("--out-dir", out_dir, names, what, overwrite, "another --name")
