"""`edgespec train draft`'s last stage: the draft to train (a new one, or the
``--init-from`` one), trained resumably on the :class:`~.make_draft.TrainingData` (its
checkpoint in ``--out``, :mod:`edgespec.learn.drafts.checkpointing`), checked on the
validation sequences and saved to ``--out``, the checkpoint then deleted
(:func:`train_stage`). What the
checkpoint is tagged with: the flags that shape the training (:func:`checkpoint_settings`,
compared before the target loads) and its data (:func:`training_data_sha256`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from edgespec.learn.drafts import distill, samples
from edgespec.learn.drafts import draft_progress as report
from edgespec.learn.drafts.checkpoint import data_sha256
from edgespec.learn.drafts.checkpointing import (
    Checkpointer,
    resumed_or_fresh,
    said_on,
    told_where_saved,
)
from edgespec.learn.drafts.make_draft import DraftJob, StepProgress, TrainingData
from edgespec.learn.finished import DRAFT, remove_earlier
from edgespec.learn.progress import progress_bar
from edgespec.models.library_output import library_output
from edgespec.models.registry import ModelNotFoundError, model_identity
from edgespec.models.seeding import torch_seeded


def model_named(name: str) -> str:
    """The model ``name`` is, however spelled (a path resolved), or ``name`` as written
    where it names none (its load fails later, saying so)."""
    try:
        return model_identity(name)
    except ModelNotFoundError:
        return name


def checkpoint_settings(job: DraftJob) -> dict[str, Any]:
    """What a training checkpoint of ``job`` must have been made with to be resumed, by
    flag (and the settings no flag sets, by name): the target, the draft continued or the
    new draft's shape, and the optimisation settings with the time budget."""
    training, arch = job.training, job.architecture
    budget_s = training.time_budget_s
    settings: dict[str, Any] = {
        "--target": model_named(job.target),
        "--init-from": None if job.init_from is None else str(job.init_from.resolve()),
        "--epochs": training.epochs,
        "--tokens-per-step": training.tokens_per_step,
        "--lr": training.learning_rate,
        "--weight-decay": training.weight_decay,
        "--seed": training.seed,
        "--train-minutes": None if budget_s is None else budget_s / 60,
        "warmup_steps": training.warmup_steps,
        "soft_weight": training.soft_weight,
        "prompt_weight": training.prompt_weight,
    }
    if job.init_from is None:
        settings |= {
            "--kept-tokens": arch.num_kept_tokens,
            "--hidden-size": arch.hidden_size,
            "--layers": arch.num_layers,
            "--heads": arch.num_heads,
            "--intermediate-size": arch.intermediate_size,
            "max_positions": arch.max_positions,
        }
    return settings


def training_data_sha256(data: TrainingData) -> str:
    """SHA-256 of what the draft trains on: every training sequence and the kept tokens."""
    fields = ("prompt_ids", "output_ids", "topk_ids", "topk_logits")
    tensors = [getattr(s, name) for s in data.train for name in fields]
    return data_sha256([*tensors, torch.tensor(data.kept, dtype=torch.long)])


def new_or_saved_draft(job: DraftJob, target: Any, saved: Any, data: TrainingData) -> Any:
    """The saved draft to continue, or a new one initialised from the target's embeddings,
    its random weights drawn from ``--seed`` alone (whatever drew from torch's generator
    before: loading the target does)."""
    if saved is not None:
        return saved
    embeddings = target.model.get_input_embeddings().weight.detach()
    special = samples.special_token_ids(target.tokenizer)
    with torch_seeded(job.training.seed):
        return distill.init_draft(embeddings, data.kept, job.architecture, special, job.target)


def checkpointer(job: DraftJob, data: TrainingData, say: Callable[[str], None]) -> Checkpointer:
    """The checkpoint of ``job``'s training in ``--out``: the one there resumed, or
    discarded (``--overwrite``, other data), each said
    (:func:`~edgespec.learn.drafts.checkpointing.resumed_or_fresh`)."""
    settings = checkpoint_settings(job)
    sha = training_data_sha256(data)
    return resumed_or_fresh(job.out, settings, sha, job.overwrite, say)


def train_and_save(
    job: DraftJob, draft: Any, data: TrainingData, on_step: StepProgress, run: Checkpointer
) -> tuple[float, int]:
    """Train ``draft`` (resuming ``run``'s checkpoint), measure its validation top-1
    agreement with the target, save it to ``job.out``, an earlier model's files there
    (``--overwrite``) removed first (the libraries quiet unless ``job.verbose``), then
    delete the checkpoint; returns (agreement, bytes saved)."""
    distill.train_draft(draft, data.train, job.training, on_step, run)
    agreement = distill.evaluate_agreement(draft, data.val, job.training)
    remove_earlier(job.out, DRAFT)
    with library_output(job.verbose):  # transformers' "Writing model shards" bar
        saved: list[Path] = draft.save(job.out)
    run.remove()
    return agreement, sum(path.stat().st_size for path in saved)


def train_stage(console: Any, job: DraftJob, draft: Any, data: TrainingData) -> tuple[float, int]:
    """The stage as the command runs it: the checkpoint in ``--out`` resumed or discarded
    (each said, :func:`checkpointer`), the draft trained under a progress bar (its time
    left within what the budget has left) and saved (:func:`train_and_save`); where it
    stops, where its checkpoint is said."""
    say = said_on(console)
    run = checkpointer(job, data, say)
    budget_s = job.training.time_budget_s
    left_s = None if budget_s is None else max(0.0, budget_s - run.elapsed_before_s)
    bar = progress_bar(console, "training", remaining=True)
    with told_where_saved(run, say), bar as update:
        return train_and_save(job, draft, data, report.on_step(console, update, left_s), run)
