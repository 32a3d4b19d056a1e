"""`edgespec train draft`: distil a trimmed-vocabulary draft from a target.

Two stages, both resumable: (1) the target's greedy continuations of the training prompts
are generated in batches into ``--data-dir`` shards (skipped shards already there; the
folder records what they were made with, and a rerun with another target or other
settings is refused, :mod:`edgespec.learn.drafts.shard_manifest`); (2) a small draft is
trained on them and saved (fp16 safetensors) to ``--out``. Training keeps a checkpoint in
``--out`` (``.training-checkpoint.pt``, at most every minute and when Ctrl-C or SIGTERM
stops it, :mod:`edgespec.learn.drafts.checkpointing`): a rerun with the same flags resumes
it at its step, its time budget going on, and the finished draft's save deletes it; one of
other flags is refused before the target loads, one of other training data (the data
stages added to it) is discarded with a line, ``--overwrite`` discards it. Settings that
would fail only after generation are refused before the target loads
(:mod:`.draft_checks`). The flags are parsed into a
:class:`~edgespec.learn.drafts.make_draft.DraftJob`, whose stages
:mod:`edgespec.learn.drafts.make_draft` and :mod:`.draft_training` run. The bundled
``gemma3-270m-draft`` was made with the command in docs/LEARN.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.argument_types import positive_int, seed_int
from edgespec.arguments import (
    MAX_BUDGET_MINUTES,
    TrainingOptions,
    add_threads,
    add_training_arguments,
    add_verbose,
    budget_minutes,
    training_options,
)
from edgespec.datasets.prompts import DATASETS
from edgespec.errors import UserInputError
from edgespec.learn.drafts import draft_progress as report
from edgespec.learn.finished import (
    DRAFT,
    TRAINING_CHECKPOINT,
    add_overwrite,
    check_replaceable,
)
from edgespec.learn.progress import progress_bar
from edgespec.output_paths import writable_output_folder

if TYPE_CHECKING:  # make_draft imports torch: the command line loads it only to run
    from edgespec.learn.drafts.draft_checks import TargetShape
    from edgespec.learn.drafts.make_draft import DraftJob
    from edgespec.learn.drafts.shard_manifest import ShardSettings

# Plain numeric options of `train draft`: flag, type (each > 0; the seed >= 0; a budget at
# most MAX_BUDGET_MINUTES), default, help (the default is appended).
_AT_MOST = f"at most {MAX_BUDGET_MINUTES:,}"
_NUMBERS: tuple[tuple[str, Callable[[str], float], float, str], ...] = (
    ("--sharegpt-limit", positive_int, 600, "ShareGPT training prompts"),
    ("--gen-minutes", budget_minutes, 35.0, f"generation budget, minutes, {_AT_MOST}"),
    ("--train-minutes", budget_minutes, 20.0, f"training budget, minutes, {_AT_MOST}"),
    ("--batch-size", positive_int, 32, "prompts generated together"),
    ("--max-prompt-tokens", positive_int, 256, "prompt tokens kept: BOS + the last ones"),
    ("--max-new-tokens", positive_int, 96, "tokens generated per prompt"),
    ("--kept-tokens", positive_int, 8192, "draft vocabulary size K (a new draft)"),
    ("--hidden-size", positive_int, 256, "draft hidden size (a new draft)"),
    ("--layers", positive_int, 3, "draft Llama blocks (a new draft)"),
    ("--heads", positive_int, 4, "draft attention heads (a new draft)"),
    ("--intermediate-size", positive_int, 768, "draft MLP width (a new draft)"),
    ("--tokens-per-step", positive_int, 8192, "tokens per optimizer step"),
    (
        "--seed",
        seed_int,
        0,
        "seed of batching, sampling, the draft's init and the validation split",
    ),
)


def add_arguments(sub: Any) -> None:
    """Add ``draft`` to ``edgespec train``'s subcommands (an argparse subparsers action)."""
    p = sub.add_parser("draft", help="distil a small trimmed-vocabulary draft model")
    p.add_argument("--target", default="gemma3-270m", help="target model (default gemma3-270m)")
    for flag, text in (
        ("--out", "directory to save the draft in"),
        ("--data-dir", "distillation shards (resumable)"),
    ):
        p.add_argument(flag, type=writable_output_folder, required=True, help=text)
    p.add_argument(
        "--datasets",
        default=",".join(DATASETS),
        help=f"comma-separated prompt sets, train split (default {','.join(DATASETS)})",
    )
    for flag, kind, default, text in _NUMBERS:
        p.add_argument(flag, type=kind, default=default, help=f"{text} (default {default:g})")
    p.add_argument(
        "--sample-temperature",
        type=float,
        default=0.0,
        help="sample continuations at this temperature (needs --fast-head; default 0 = greedy)",
    )
    p.add_argument(
        "--train-data-dir",
        type=Path,
        action="append",
        default=[],
        help="more shard directories to train on (repeatable)",
    )
    add_training_arguments(
        p,
        defaults=TrainingOptions(epochs=4, learning_rate=2e-3, weight_decay=0.01),
        helps={"learning_rate": "AdamW peak learning rate (warm-up, cosine decay)"},
    )
    add_threads(p, 1)
    add_verbose(p)
    p.add_argument("--skip-generate", action="store_true", help="train on the shards as they are")
    add_overwrite(p, "a draft or other model saved at --out", TRAINING_CHECKPOINT)
    p.add_argument(
        "--init-from", type=Path, help="continue training this saved draft (keeps its size, K)"
    )
    p.add_argument(
        "--fast-head",
        action="store_true",
        help="generate with the target's head cut to the --init-from draft's tokens (0.66x "
        "the time of transformers' generate on one CPU thread: benchmarks/results/"
        "distill-speed-gemma3-270m.json, docs/LEARN.md)",
    )
    p.add_argument(
        "--text-data-dir",
        type=writable_output_folder,
        help="also label training texts (teacher forcing) into this directory",
    )
    p.add_argument(
        "--conversations",
        type=positive_int,
        help="with --text-data-dir: ShareGPT conversations to label (default 2000)",
    )
    p.add_argument(
        "--text-minutes",
        type=budget_minutes,
        help=f"with --text-data-dir: labelling budget, minutes, {_AT_MOST} (default 15)",
    )
    p.add_argument(
        "--text-max-tokens",
        type=positive_int,
        help="with --text-data-dir: tokens per labelled text (default 256)",
    )


def draft_job(args: argparse.Namespace) -> DraftJob:
    """The run the flags describe; a contradiction or a missing directory is a usage error
    (:func:`_check_flags`)."""
    from edgespec.learn.drafts.checkpoint import check_resumable
    from edgespec.learn.drafts.distill import DraftArchitecture, TrainSettings
    from edgespec.learn.drafts.distill_data import GenerationSettings
    from edgespec.learn.drafts.draft_checks import text_flags, training_datasets
    from edgespec.learn.drafts.draft_training import checkpoint_settings
    from edgespec.learn.drafts.make_draft import DraftJob, TextLabelling

    _check_flags(args)
    options = training_options(args)
    labelling = None
    if args.text_data_dir is not None:
        text = text_flags(args)
        labelling = TextLabelling(args.text_data_dir, text["conversations"],
                                  text["text_minutes"], text["text_max_tokens"])  # fmt: skip
    job = DraftJob(
        target=args.target,
        out=args.out,
        data_dir=args.data_dir,
        datasets=training_datasets(args.datasets),
        sharegpt_limit=args.sharegpt_limit,
        generation=GenerationSettings(
            batch_size=args.batch_size,
            max_prompt_tokens=args.max_prompt_tokens,
            max_new_tokens=args.max_new_tokens,
            seed=args.seed,
            temperature=args.sample_temperature,
        ),
        gen_minutes=args.gen_minutes,
        architecture=DraftArchitecture(
            args.kept_tokens, args.hidden_size, args.layers, args.heads, args.intermediate_size
        ),
        training=TrainSettings(
            epochs=options.epochs,
            tokens_per_step=args.tokens_per_step,
            learning_rate=options.learning_rate,
            weight_decay=options.weight_decay or 0.0,
            seed=args.seed,
            time_budget_s=args.train_minutes * 60,
        ),
        extra_data_dirs=tuple(args.train_data_dir),
        init_from=args.init_from,
        fast_head=args.fast_head,
        skip_generate=args.skip_generate,
        labelling=labelling,
        verbose=args.verbose,
        overwrite=args.overwrite,
    )
    check_resumable(job.out, checkpoint_settings(job), job.overwrite)
    return job


def _check_flags(args: argparse.Namespace) -> None:
    """Flags that contradict each other, a missing directory, a new draft's shape that no
    target fits, a limit too small to use: each a one-line usage error, before any work."""
    from edgespec.learn.drafts.draft_checks import (
        check_distinct_data_dirs,
        check_heads,
        check_out_apart,
        check_skipped_generation,
        text_flags,
    )
    from edgespec.learn.drafts.make_draft import trimmed_draft_path

    if args.fast_head and args.init_from is None:
        raise UserInputError("--fast-head needs --init-from (its kept tokens form the head)")
    if args.sample_temperature < 0:
        raise UserInputError(f"--sample-temperature must be >= 0, got {args.sample_temperature}")
    if args.sample_temperature > 0 and not args.fast_head:
        raise UserInputError("--sample-temperature needs --fast-head (it samples the cut head)")
    if args.skip_generate:  # a generation flag given with it generated nothing
        check_skipped_generation(args, {flag: default for flag, _, default, _ in _NUMBERS})
    for extra in args.train_data_dir:
        if not extra.is_dir():
            raise UserInputError(f"--train-data-dir {str(extra)!r} is not a directory")
    check_distinct_data_dirs(args.data_dir, args.train_data_dir)
    text = text_flags(args)  # given without --text-data-dir: refused
    named = [("--data-dir", args.data_dir), ("--text-data-dir", args.text_data_dir)]
    check_out_apart(args.out, named + [("--train-data-dir", d) for d in args.train_data_dir])
    check_replaceable("--out", args.out, DRAFT, args.overwrite)
    if args.init_from is not None:  # no draft, or a cut-off one: named before the target loads
        trimmed_draft_path("--init-from", args.init_from)
    else:  # a new draft's shape; its fit to the target is checked once its size is known
        check_heads(args.hidden_size, args.heads)
    if args.max_prompt_tokens < 2:
        raise UserInputError(
            f"--max-prompt-tokens must be >= 2 (BOS + one), got {args.max_prompt_tokens}"
        )
    if args.text_data_dir is not None and text["text_max_tokens"] < 3:
        raise UserInputError(f"--text-max-tokens must be >= 3, got {text['text_max_tokens']}")


def run(args: argparse.Namespace) -> int:
    import torch
    from rich.console import Console

    from edgespec.learn.drafts import make_draft as make
    from edgespec.learn.drafts.draft_checks import loaded_target_shape, saved_target_shape
    from edgespec.learn.drafts.draft_training import new_or_saved_draft, train_stage
    from edgespec.models.loading import load_model

    job = draft_job(args)
    console = Console(stderr=True, markup=False)
    torch.set_num_threads(args.threads)
    saved = make.load_saved(job)
    # The target's sizes from its config.json where there is one, so that what would fail or
    # mix only after generation is refused before the target loads; else once it has.
    shape = saved_target_shape(job.target)
    settings = None if shape is None else _checked(console, job, saved, shape)
    with console.status(f"loading target {job.target}"):
        target = load_model(job.target, require_tokenizer=True, verbose=job.verbose)
    if settings is None:
        settings = _checked(console, job, saved, loaded_target_shape(job.target, target.model))
    if not job.skip_generate:
        with progress_bar(console, "generating", remaining=True) as update:
            on_batch = report.on_generated(console, update, job.gen_minutes * 60)
            make.generate(job, target, saved, settings, on_batch)
    labelling = progress_bar(console, "labelling conversations", remaining=True)
    with labelling if job.labelling else nullcontext(report.no_update) as update:
        minutes = job.labelling.minutes if job.labelling else None
        on_labelled = report.on_labelled(console, update, None if minutes is None else minutes * 60)
        data = make.training_data(job, target, saved, settings, on_labelled)
    draft = new_or_saved_draft(job, target, saved, data)
    del target
    console.print(
        f"{len(data.train)} training / {len(data.val)} validation sequences, "
        f"K = {len(data.kept)} kept tokens ({data.leaked} sharing a validation prompt left out)"
    )
    agreement, num_bytes = train_stage(console, job, draft, data)
    console.print(f"validation top-1 agreement with the target: {agreement:.3f}")
    size = f"{num_bytes / 1e6:.1f} MB" if num_bytes >= 1e6 else f"{num_bytes / 1e3:.1f} kB"
    console.print(f"saved draft to {job.out} ({size})")
    return 0


def _checked(console: Any, job: DraftJob, saved: Any, shape: TargetShape) -> ShardSettings:
    """The settings of the shards the run makes, once checked
    (:func:`~edgespec.learn.drafts.make_draft.check_settings`, its warnings shown)."""
    from edgespec.learn.drafts import make_draft as make

    settings = make.shard_settings(job, saved, shape)
    for warning in make.check_settings(job, saved, settings):
        console.print(warning, style="yellow", soft_wrap=True)
    return settings
