"""`edgespec train feature-draft`: train an EAGLE-style feature draft for a target.

Two stages, both resumable: (1) the target's features of every sequence in the
``--data-dir`` shards (generation shards of ``edgespec train draft``, or text shards of
``edgespec train text-shards``; shards whose record names another target are refused,
:func:`~edgespec.learn.drafts.shard_manifest.check_shard_target`) are written to
``--features-dir``, which records whose features and which folders' shards they are (a
folder of another target or another folder of the same name is refused,
:mod:`edgespec.learn.drafts.feature_record`), both before any model loads where the
target's ``config.json`` gives its sizes; (2) the draft is trained on them and saved to
``--out`` (edgespec/learn/drafts/feature_train.py, :mod:`.feature_training`), keeping a
checkpoint in ``--out`` as ``train draft`` does (``.training-checkpoint.pt``,
:mod:`edgespec.learn.drafts.checkpointing`): a rerun with the same flags resumes it, one of
other flags is refused before the target loads, one of other features is discarded with a
line, ``--overwrite`` discards it, and the finished draft's save deletes it.
``--features-dir`` must be a folder of its own and each ``--data-dir`` a folder of shards
(:mod:`.shard_kinds`). No feature draft is bundled; the runs measured so far and their
commands are in docs/LEARN.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.argument_types import positive_int
from edgespec.arguments import (
    MAX_BUDGET_MINUTES,
    TrainingOptions,
    add_seed,
    add_threads,
    add_training_arguments,
    add_verbose,
    budget_minutes,
    training_options,
)
from edgespec.errors import UserInputError
from edgespec.learn.finished import DRAFT, TRAINING_CHECKPOINT, add_overwrite, check_replaceable
from edgespec.learn.progress import Pace, progress_bar
from edgespec.output_paths import writable_output_folder

if TYPE_CHECKING:
    from edgespec.learn.drafts.draft_checks import TargetShape


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("feature-draft", help="train an EAGLE-style draft on the target's features")
    p.add_argument("--target", default="gemma3-270m", help="target model (default gemma3-270m)")
    p.add_argument(
        "--out", type=writable_output_folder, required=True, help="directory to save the draft in"
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        action="append",
        required=True,
        help="token shards (shard_*.pt from `edgespec train draft` or `edgespec train "
        "text-shards`; repeatable)",
    )
    p.add_argument(
        "--features-dir",
        type=writable_output_folder,
        required=True,
        help="target features (resumable)",
    )
    p.add_argument("--kept-from", type=Path, help="take the kept tokens of this trimmed draft")
    p.add_argument(
        "--kept-tokens",
        type=positive_int,
        default=8192,
        help="K, when not --kept-from (default 8192)",
    )
    p.add_argument(
        "--steps",
        type=positive_int,
        default=2,
        help="drafting steps unrolled in training (default 2)",
    )
    p.add_argument(
        "--intermediate-size", type=positive_int, default=1024, help="MLP width (default 1024)"
    )
    p.add_argument("--heads", type=positive_int, default=8, help="attention heads (default 8)")
    p.add_argument(
        "--head-dim", type=positive_int, default=64, help="size of one head (default 64)"
    )
    add_training_arguments(
        p,
        defaults=TrainingOptions(epochs=3, learning_rate=5e-4, batch_size=8, holdout=0.05),
        helps={
            "epochs": "passes over the features",
            "batch_size": "sequences per optimizer step",
            "holdout": "share of prompts held out for validation",
        },
    )
    p.add_argument(
        "--feature-minutes",
        type=budget_minutes,
        default=60.0,
        help=f"featurizing budget, minutes, at most {MAX_BUDGET_MINUTES:,} (default 60)",
    )
    p.add_argument(
        "--train-minutes",
        type=budget_minutes,
        default=30.0,
        help=f"training budget, minutes, at most {MAX_BUDGET_MINUTES:,} (default 30)",
    )
    add_threads(p, 1)
    add_verbose(p)
    add_seed(p, "init, batch order and the validation split")
    add_overwrite(p, "a draft or other model saved at --out", TRAINING_CHECKPOINT)


def _kept_from(args: argparse.Namespace) -> list[int] | None:
    """The kept tokens of the ``--kept-from`` trimmed draft (None without it), read before
    the target loads: a bad or cut-off directory is reported without that wait."""
    if args.kept_from is None:
        return None
    from edgespec.learn.drafts.make_draft import load_trimmed_draft

    saved = load_trimmed_draft("--kept-from", args.kept_from, args.verbose)
    return [int(t) for t in saved.config.draft_token_ids]


def _kept_tokens(args: argparse.Namespace, target: object) -> list[int]:
    """K tokens the shards' continuations use most (the special tokens always among them):
    distillation shards or ``train text-shards``' (which hold no top-k lists: they were
    refused here as "not a shard")."""
    from edgespec.learn.drafts import samples as shards

    sequences = [pair for path in shard_files(args.data_dir)
                 for pair in shards.read_token_shard(path) if len(pair[1]) > 0]  # fmt: skip
    always = list(shards.special_token_ids(getattr(target, "tokenizer", None)).values())
    return shards.choose_kept_tokens(sequences, args.kept_tokens, always)


def shard_files(directories: list[Path]) -> list[Path]:
    """The ``shard_*.pt`` files of every ``--data-dir``; a missing folder, a file, a saved
    model (:func:`~edgespec.learn.drafts.shard_kinds.check_shard_source`) or a folder
    holding none is a usage error."""
    from edgespec.learn.drafts.shard_kinds import check_shard_source

    shards = []
    for directory in directories:
        check_shard_source("--data-dir", directory)
        found = sorted(directory.glob("shard_*.pt"))
        if not found:
            raise UserInputError(f"--data-dir {str(directory)!r} holds no shard_*.pt files")
        shards.extend(found)
    return shards


def run(args: argparse.Namespace) -> int:
    import torch
    from rich.console import Console

    from edgespec.learn.drafts import feature_train as ft
    from edgespec.learn.drafts import feature_training as training
    from edgespec.learn.drafts.checkpoint import check_resumable
    from edgespec.learn.drafts.draft_progress import shown
    from edgespec.learn.drafts.feature_record import record_features_folder

    shards = _checked_folders(args)
    options = training_options(args)
    holdout = options.holdout or 0.05
    settings = ft.FeatureTrainSettings(
        num_steps=args.steps,
        sequences_per_batch=options.batch_size or 8,
        learning_rate=options.learning_rate,
        epochs=options.epochs,
        time_budget_s=args.train_minutes * 60,
        seed=args.seed,
    )
    check_resumable(args.out, training.checkpoint_settings(args, settings, holdout), args.overwrite)
    console = Console(stderr=True, markup=False)
    torch.set_num_threads(args.threads)
    target, shape, kept_from = _checked_target(console, args)
    kept = kept_from if kept_from is not None else _kept_tokens(args, target)
    record_features_folder(args.features_dir, shape, args.data_dir)
    done = _featurize(args, target, shards, console)
    train, val = ft.split_by_prompt(ft.load_feature_files(done), holdout, args.seed)
    ft.check_trainable(train, len(val), holdout, settings.num_steps)
    net = _new_draft(args, target, kept)
    positions = sum(len(s.ids) for s in train)
    console.print(
        f"training on {len(train)} sequences ({positions} positions), {len(val)} held out"
    )
    steps, agreement = training.train_and_save(console, args, net, (train, val), settings, holdout)
    per_step = ", ".join(f"step {i + 1}: {shown(a, 3)}" for i, a in enumerate(agreement))
    console.print(f"{steps} steps; held-out top-1 agreement {per_step}; saved to {args.out}")
    return 0


def _checked_folders(args: argparse.Namespace) -> list[Path]:
    """The ``--data-dir`` shards, every folder and ``--head-dim`` and ``--kept-from``
    checked before any model loads: ``--out`` apart from the data and not holding a
    draft unless ``--overwrite``."""
    from edgespec.learn.drafts.draft_checks import check_out_apart
    from edgespec.learn.drafts.make_draft import trimmed_draft_path
    from edgespec.learn.drafts.shard_kinds import check_features_apart

    shards = shard_files(args.data_dir)
    check_features_apart(args.features_dir, args.data_dir)
    named = [("--data-dir", folder) for folder in args.data_dir]
    check_out_apart(args.out, [*named, ("--features-dir", args.features_dir)])
    check_replaceable("--out", args.out, DRAFT, args.overwrite)
    if args.head_dim % 2:  # else refused by the draft's config only after featurizing
        raise UserInputError(
            f"--head-dim must be even (rotary position embeddings turn pairs), got {args.head_dim}"
        )
    if args.kept_from is not None:  # no draft, or a cut-off one: named before the folders
        trimmed_draft_path("--kept-from", args.kept_from)
    return shards


def _checked_target(
    console: Any, args: argparse.Namespace
) -> tuple[Any, TargetShape, list[int] | None]:
    """The loaded target, its sizes and the ``--kept-from`` draft's kept tokens, the
    ``--data-dir`` and ``--features-dir`` folders checked first: before any model loads
    where the target's ``config.json`` gives its sizes, else once it has loaded."""
    from edgespec.learn.drafts.draft_checks import loaded_target_shape, saved_target_shape
    from edgespec.models.loading import load_model

    shape = saved_target_shape(args.target)
    if shape is not None:
        _check_folders(console, args, shape)
    kept_from = _kept_from(args)  # a bad --kept-from is named before the target loads
    with console.status(f"loading target {args.target}"):
        target = load_model(args.target, verbose=args.verbose)
    if shape is None:
        shape = loaded_target_shape(args.target, target.model)
        _check_folders(console, args, shape)
    return target, shape, kept_from


def _check_folders(console: Any, args: argparse.Namespace, shape: TargetShape) -> None:
    """A ``--features-dir`` of another target or other shards
    (:func:`~edgespec.learn.drafts.feature_record.check_features_folder`), and each
    ``--data-dir`` of shards of another target
    (:func:`~edgespec.learn.drafts.shard_manifest.check_shard_target`), refused before
    featurizing; their warnings shown."""
    from edgespec.learn.drafts.feature_record import check_features_folder
    from edgespec.learn.drafts.shard_manifest import check_shard_target

    warnings = [check_features_folder(args.features_dir, shape, args.data_dir)]
    warnings += [check_shard_target("--data-dir", folder, shape) for folder in args.data_dir]
    for warning in warnings:
        if warning is not None:
            console.print(warning, style="yellow", soft_wrap=True)


def _featurize(args: argparse.Namespace, target: Any, shards: list[Path], console: Any) -> Any:
    """Stage 1: the target's features of every shard within ``--feature-minutes``
    (resumable); returns the feature files done."""
    from edgespec.learn.drafts import feature_train as ft

    made = [ft.features_file(args.features_dir, shard).exists() for shard in shards]
    left = made.count(False)  # a resumed run's time left counts the shards still to do
    with progress_bar(console, "target features", len(shards), remaining=True) as update:
        update(completed=made.count(True))
        pace = Pace(args.feature_minutes * 60)

        def on_shard(path: Path, positions: int) -> None:
            nonlocal left
            left -= 1
            update(advance=1, ends_at=pace.ends_at(left))
            if not console.is_terminal:
                console.print(f"features of {path.name}: {positions} positions")

        deadline = time.monotonic() + args.feature_minutes * 60
        done = ft.featurize_shards(target.model, shards, args.features_dir, deadline, on_shard)
        update(completed=len(done))
    if len(done) < len(shards):
        console.print(f"features budget: {len(done)} of {len(shards)} shards", style="yellow")
    return done


def _new_draft(args: argparse.Namespace, target: Any, kept: list[int]) -> Any:
    """A new feature draft over ``kept``, its embedding and head rows the target's, the rest
    drawn from ``--seed`` alone (loading the target draws from torch's own generator)."""
    from edgespec.models.feature_draft import FeatureDraftConfig, FeatureDraftNet, target_rows
    from edgespec.models.seeding import torch_seeded

    weight = target.model.get_input_embeddings().weight
    config = FeatureDraftConfig(
        target_name=args.target,
        target_vocab_size=int(weight.shape[0]),
        hidden_size=int(weight.shape[1]),
        draft_token_ids=tuple(kept),
        num_heads=args.heads,
        head_dim=args.head_dim,
        intermediate_size=args.intermediate_size,
    )
    with torch_seeded(args.seed):
        return FeatureDraftNet(config, *target_rows(target.model, kept))
