"""`edgespec train feature-draft`'s last stage: the feature draft trained resumably (its
checkpoint in ``--out``, :mod:`edgespec.learn.drafts.checkpointing`), checked on the
held-out sequences and saved to ``--out``, the checkpoint then deleted; and what the
checkpoint is tagged with: the flags that shape the training
(:func:`checkpoint_settings`, compared before the target loads) and its data (the
training sequences' ids and features, and the kept tokens)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import torch

from edgespec.learn.drafts import draft_progress as report
from edgespec.learn.drafts import feature_train as ft
from edgespec.learn.drafts.checkpoint import data_sha256
from edgespec.learn.drafts.checkpointing import resumed_or_fresh, said_on, told_where_saved
from edgespec.learn.drafts.draft_training import model_named
from edgespec.learn.finished import DRAFT, remove_earlier
from edgespec.learn.progress import progress_bar


def checkpoint_settings(
    args: argparse.Namespace, settings: ft.FeatureTrainSettings, holdout: float
) -> dict[str, Any]:
    """What a training checkpoint of this run must have been made with to be resumed, by
    flag (and the settings no flag sets, by name)."""
    kept_from = None if args.kept_from is None else str(args.kept_from.resolve())
    budget_s = settings.time_budget_s
    return {
        "--target": model_named(args.target),
        "--kept-from": kept_from,
        "--kept-tokens": args.kept_tokens if kept_from is None else None,
        "--steps": settings.num_steps,
        "--intermediate-size": args.intermediate_size,
        "--heads": args.heads,
        "--head-dim": args.head_dim,
        "--epochs": settings.epochs,
        "--lr": settings.learning_rate,
        "--batch-size": settings.sequences_per_batch,
        "--holdout": holdout,
        "--train-minutes": None if budget_s is None else budget_s / 60,
        "--seed": settings.seed,
        "warmup_fraction": settings.warmup_fraction,
        "feature_weight": settings.feature_weight,
    }


def training_data_sha256(train: Sequence[ft.FeatureSequence], kept: Sequence[int]) -> str:
    """SHA-256 of what the draft trains on: each sequence's ids, features and prompt
    length, and the kept tokens."""
    tensors = [t for s in train for t in (s.ids, s.features, torch.tensor(s.prompt_len))]
    return data_sha256([*tensors, torch.tensor(list(kept), dtype=torch.long)])


def train_and_save(
    console: Any,
    args: argparse.Namespace,
    net: Any,
    data: tuple[list[ft.FeatureSequence], list[ft.FeatureSequence]],
    settings: ft.FeatureTrainSettings,
    holdout: float,
) -> tuple[int, list[float]]:
    """Train ``net`` on the training sequences of ``data`` (resuming the checkpoint in
    ``--out``, each line of it said), measure its held-out agreement per drafting step,
    save it to ``--out`` (an earlier model's files removed first: ``--overwrite``) and
    delete the checkpoint; returns (steps, agreement per step)."""
    from edgespec.models.feature_draft import save_feature_draft

    train, val = data
    kept = [int(t) for t in net.config.draft_token_ids]
    say = said_on(console)
    run = resumed_or_fresh(
        args.out,
        checkpoint_settings(args, settings, holdout),
        training_data_sha256(train, kept),
        args.overwrite,
        say,
    )
    budget_s = settings.time_budget_s
    left_s = None if budget_s is None else max(0.0, budget_s - run.elapsed_before_s)
    with (
        told_where_saved(run, say),
        progress_bar(console, "training", elapsed=False, remaining=True, info=True) as update,
    ):
        on_step = report.on_feature_step(console, update, left_s)
        steps = ft.train_feature_draft(net, train, settings, on_step, run)
    agreement = ft.evaluate(net, val, settings)
    remove_earlier(args.out, DRAFT)  # an earlier model's files (--overwrite): none left mixed
    save_feature_draft(net, args.out)
    run.remove()
    return steps, agreement
