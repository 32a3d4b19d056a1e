"""`edgespec train draft`'s work, stage by stage, from a validated :class:`DraftJob`:
what would fail or mix only after generation checked first (:func:`check_settings`),
the target's continuations generated into shards (:func:`generate`), the training and
validation sequences and the kept tokens (:func:`training_data`, optionally with
teacher-forced text labels), then the draft trained (resumably), checked and saved
(:mod:`edgespec.learn.drafts.draft_training`). The command
(:mod:`edgespec.learn.drafts.command`) parses its flags into the job and shows the
progress these report through callbacks."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.learn.drafts import distill, samples
from edgespec.learn.drafts import shard_manifest as manifest
from edgespec.learn.drafts.distill_data import GenerationSettings, label_width
from edgespec.learn.drafts.draft_checks import TargetShape, check_fits_target
from edgespec.models.library_output import library_output

BatchProgress = Callable[[int, int, float], None]
"""``(batches done, batches in all, seconds of the last one)``."""
StepProgress = Callable[[int, int, float, float], None]
"""``(step, steps in all, loss, top-1 agreement)``."""


@dataclass(frozen=True, slots=True)
class TextLabelling:
    """Teacher-forced labels of texts (the datasets' training prompts, ShareGPT
    conversations) written to ``data_dir`` and trained on too."""

    data_dir: Path
    conversations: int = 2000
    minutes: float = 15.0
    max_tokens: int = 256


@dataclass(frozen=True, slots=True)
class DraftJob:
    """One ``edgespec train draft`` run, validated by the command."""

    target: str
    out: Path
    data_dir: Path
    datasets: tuple[str, ...]
    sharegpt_limit: int
    generation: GenerationSettings
    gen_minutes: float
    architecture: distill.DraftArchitecture
    training: distill.TrainSettings
    extra_data_dirs: tuple[Path, ...] = ()
    init_from: Path | None = None
    fast_head: bool = False
    skip_generate: bool = False
    labelling: TextLabelling | None = None
    verbose: bool = False
    overwrite: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class TrainingData:
    """The sequences to train and validate on, the draft's kept tokens, and how many
    training sequences were left out for sharing a prompt with a validation one."""

    train: list[samples.Sample]
    val: list[samples.Sample]
    kept: list[int]
    leaked: int


def load_saved(job: DraftJob) -> Any:
    """The ``--init-from`` draft to continue (None for a new draft)."""
    if job.init_from is None:
        return None
    return load_trimmed_draft("--init-from", job.init_from, job.verbose)


def load_trimmed_draft(flag: str, directory: Path, verbose: bool) -> Any:
    """The trimmed draft saved in ``directory`` (given as ``flag``), checked first
    (:func:`trimmed_draft_path`)."""
    from edgespec.models.trimmed import TrimmedVocabDraft

    path = trimmed_draft_path(flag, directory)
    with library_output(verbose):
        return TrimmedVocabDraft.load(path)


def trimmed_draft_path(flag: str, directory: Path) -> Path:
    """Where the trimmed draft ``directory`` (given as ``flag``) is, checked by the model
    registry (:func:`~edgespec.models.registry.resolve_model`) without loading it: no
    directory (a ``.gguf`` file, a model name), a directory whose save was cut off, or one
    that holds no trimmed draft is a one-line :class:`~edgespec.errors.UserInputError`
    naming ``flag`` and what it takes, not a library traceback."""
    from edgespec.errors import UserInputError
    from edgespec.models.registry import TRIMMED_MARKER, ModelNotFoundError, resolve_model

    name = str(directory)
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise UserInputError(
            f"{flag} {name!r} {what}: it takes a directory `edgespec train draft` saved "
            "(a trimmed draft), not a model name or .gguf file"
        )
    try:  # "./": a path, even one spelled like a known model's name
        spec = resolve_model(name if "/" in name else f"./{name}")
    except ModelNotFoundError as exc:
        raise UserInputError(f"{flag}: {exc}") from None
    if spec.path is None or not (spec.path / TRIMMED_MARKER).is_file():
        raise UserInputError(f"{flag} {name!r} holds no trimmed draft (no {TRIMMED_MARKER}); "
                             "give a directory `edgespec train draft` saved")  # fmt: skip
    return spec.path


def shard_settings(job: DraftJob, saved: Any, shape: TargetShape) -> manifest.ShardSettings:
    """What the shards this run generates are made with: their labels are the target's
    top-k, or all of a ``--fast-head``'s tokens where it has fewer (:func:`head_ids`)."""
    generation, head = job.generation, head_ids(job, saved)
    return manifest.ShardSettings(
        target=shape.name,
        target_vocab_size=shape.vocab_size,
        target_hidden_size=shape.hidden_size,
        datasets=job.datasets,
        sharegpt_limit=job.sharegpt_limit if "sharegpt" in job.datasets else None,
        batch_size=generation.batch_size,
        max_prompt_tokens=generation.max_prompt_tokens,
        max_new_tokens=generation.max_new_tokens,
        top_k=generation.top_k if head is None else label_width(len(head), generation.top_k),
        seed=generation.seed,
        temperature=generation.temperature,
    )


def head_ids(job: DraftJob, saved: Any) -> list[int] | None:
    """The tokens a ``--fast-head`` cuts the target's head to: the saved draft's kept ones."""
    return list(saved.config.draft_token_ids) if job.fast_head and saved is not None else None


def text_settings(
    job: DraftJob,
    labelling: TextLabelling,
    settings: manifest.ShardSettings,
    kept: Sequence[int] | None,
) -> manifest.TextLabelSettings:
    """What the ``labelling`` shards of this run are made with: ``settings``' target, and
    the draft's ``kept`` tokens (``None``: not chosen yet)."""
    texts = (job.datasets, labelling.conversations, labelling.max_tokens)
    return manifest.text_label_settings(settings, *texts, kept)


def check_settings(job: DraftJob, saved: Any, settings: manifest.ShardSettings) -> list[str]:
    """Before generation, what would otherwise fail or mix only after it: a new draft wider
    than the target allows (:func:`~edgespec.learn.drafts.draft_checks.check_fits_target`),
    ``--data-dir`` shards made with other ``settings`` (only another target's when
    ``--skip-generate``: they are trained on as they are), ``--train-data-dir`` shards of
    another target, ``--text-data-dir`` shards of other texts or another target (or, with
    ``--init-from``, other kept tokens; a new draft's are checked once chosen,
    :func:`label_conversations`); any of them of another kind, or one written into that
    holds a model (:mod:`.shard_kinds`). Returns the warnings of unrecorded folders."""
    if saved is None:
        arch = job.architecture
        check_fits_target(arch.hidden_size, arch.num_kept_tokens, settings.target_hidden_size)
    compared = manifest.TARGET_FIELDS if job.skip_generate else manifest.ALL_FIELDS
    found = [manifest.check_shard_folder("--data-dir", job.data_dir, settings, compared)]
    for extra in job.extra_data_dirs:
        found.append(
            manifest.check_shard_folder("--train-data-dir", extra, settings, manifest.TARGET_FIELDS)
        )
    if (labelling := job.labelling) is not None:
        kept = None if saved is None else saved.config.draft_token_ids
        text = text_settings(job, labelling, settings, kept)
        fields = manifest.TEXT_FIELDS if kept is not None else manifest.TEXT_FIELDS_BUT_KEPT
        flag = "--text-data-dir"
        found.append(manifest.check_shard_folder(flag, labelling.data_dir, text, fields))
    return [warning for warning in found if warning is not None]


def generate(
    job: DraftJob,
    target: Any,
    saved: Any,
    settings: manifest.ShardSettings,
    on_batch: BatchProgress,
) -> None:
    """Stage 1: the target's continuations of the datasets' training prompts into
    ``job.data_dir`` shards, within ``job.gen_minutes`` (resumable); a folder with no
    shard yet first gets the record of their ``settings``."""
    from edgespec.datasets.prompts import load_prompts
    from edgespec.learn.drafts.distill_data import generate_distillation_data

    if not manifest.has_shards(job.data_dir):
        manifest.record_settings(job.data_dir, settings)
    prompts = []
    for name in job.datasets:
        limit = job.sharegpt_limit if name == "sharegpt" else None
        prompts.extend(load_prompts(name, "train", limit))
    generate_distillation_data(
        target.model,
        target.tokenizer,
        prompts,
        job.data_dir,
        job.generation,
        on_batch,
        time.monotonic() + job.gen_minutes * 60,
        head_ids=head_ids(job, saved),
    )


def training_data(
    job: DraftJob,
    target: Any,
    saved: Any,
    settings: manifest.ShardSettings,
    on_labelled: BatchProgress,
) -> TrainingData:
    """The shards split into validation (1 in 20, at least 1, generated continuations
    only: on-policy) and training sequences, plus the extra directories and the text
    labels (by ``settings``' target); the kept tokens are the saved draft's or the
    training data's most common."""
    shards = samples.load_shards(job.data_dir)
    order = list(range(len(shards)))
    random.Random(job.training.seed).shuffle(order)
    num_val = max(1, len(shards) // 20)
    val = [shards[i] for i in order[:num_val]]
    train = [shards[i] for i in order[num_val:]]
    special = samples.special_token_ids(target.tokenizer)
    kept = (
        list(saved.config.draft_token_ids)
        if saved is not None
        else samples.choose_kept_tokens(
            samples.token_ids(train),
            job.architecture.num_kept_tokens,
            always=sorted(set(special.values())),
        )
    )
    if job.extra_data_dirs:
        train.extend(samples.load_shards(*job.extra_data_dirs))
    if (labelling := job.labelling) is not None:
        text = text_settings(job, labelling, settings, kept)
        train.extend(label_conversations(job, labelling, text, target, kept, on_labelled))
    train, leaked = samples.without_prompts_of(train, val)
    return TrainingData(train, val, kept, leaked)


def label_conversations(
    job: DraftJob,
    labelling: TextLabelling,
    text: manifest.TextLabelSettings,
    target: Any,
    kept: list[int],
    on_batch: BatchProgress,
) -> list[samples.Sample]:
    """Teacher-forced labels for the training prompts of the non-ShareGPT datasets and for
    ShareGPT conversations, into shards of the ``text`` settings (resumable: a folder of
    other ones, a new draft's other kept tokens included, is refused first; one with no
    shard yet first gets their record); returns their samples."""
    from edgespec.datasets.prompts import load_prompts
    from edgespec.learn.drafts.distill_text import label_texts, sharegpt_conversations

    folder = labelling.data_dir
    manifest.check_shard_folder("--text-data-dir", folder, text, manifest.TEXT_FIELDS)
    if not manifest.has_shards(folder):
        manifest.record_settings(folder, text)
    # The other datasets' training prompts (articles, code, questions), then conversations.
    texts = [
        p.text for name in job.datasets if name != "sharegpt" for p in load_prompts(name, "train")
    ]
    texts.extend(sharegpt_conversations(limit=labelling.conversations))
    label_texts(
        target.model,
        target.tokenizer,
        texts,
        folder,
        kept,
        max_tokens=labelling.max_tokens,
        progress=on_batch,
        deadline_s=time.monotonic() + labelling.minutes * 60,
    )
    return samples.load_shards(folder)
