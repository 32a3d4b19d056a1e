"""Train a feature draft (edgespec/models/feature_draft.py) on a target's own features.

Data: token sequences (prompt + the target's continuation, from ``edgespec train draft``
shards) and the target's last-layer features at every position, computed once per shard
into ``features_<shard>.pt`` (resumable). Loss, summed over unrolled drafting steps
s = 1..``num_steps`` at every base position: cross-entropy of the step's head logits to
the target's argmax among the kept tokens at the predicted position, plus
``feature_weight`` × smooth-L1 between predicted and true features (EAGLE's two terms).
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from edgespec.errors import UserInputError
from edgespec.learn.drafts.checkpointing import Checkpointer
from edgespec.learn.drafts.samples import checked_lists, load_torch_file, read_token_shard
from edgespec.learn.settings_checks import (
    check_at_least_one,
    check_non_negative,
    check_positive,
    check_time_budget,
)
from edgespec.models.feature_draft import FeatureDraftNet
from edgespec.output_paths import write_atomically


@dataclass(frozen=True, slots=True)
class FeatureSequence:
    """A sequence in target ids, the target's features (fp16, L × d), and where its
    prompt ends (``prompt_len``: the prompt identifies it for the validation hold-out)."""

    ids: torch.Tensor
    features: torch.Tensor
    prompt_len: int


@dataclass(frozen=True, slots=True)
class FeatureTrainSettings:
    """Optimisation settings; a bad field is a ``ValueError`` naming it and its value.
    ``warmup_fraction``, in (0, 1], is the share of training spent warming up the learning
    rate; ``time_budget_s`` is ``None`` for no budget."""

    num_steps: int = 2
    sequences_per_batch: int = 8
    learning_rate: float = 5e-4
    warmup_fraction: float = 0.03
    feature_weight: float = 0.5
    epochs: int = 3
    time_budget_s: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        check_at_least_one(
            num_steps=self.num_steps,
            sequences_per_batch=self.sequences_per_batch,
            epochs=self.epochs,
        )
        check_positive("learning_rate", self.learning_rate)
        if not 0.0 < self.warmup_fraction <= 1.0:
            raise ValueError(f"warmup_fraction must be in (0, 1], got {self.warmup_fraction}")
        check_non_negative("feature_weight", self.feature_weight)
        check_time_budget(self.time_budget_s)


@torch.inference_mode()
def target_features(target_model: Any, ids: Sequence[int]) -> torch.Tensor:
    """The target's last-layer hidden states (after the final norm) at every position."""
    decoder = target_model.get_decoder()
    out = decoder(input_ids=torch.tensor([list(ids)], dtype=torch.long))
    features: torch.Tensor = out.last_hidden_state[0].to(torch.float16)
    return features


def features_file(features_dir: Path, shard: Path) -> Path:
    """Where the features of ``shard`` are kept in ``features_dir`` (named by the shard's
    folder and file: two ``--data-dir`` folders' shards of one number apart)."""
    return features_dir / f"features_{shard.parent.name}_{shard.name}"


def featurize_shards(
    target_model: Any,
    shard_paths: Sequence[Path],
    features_dir: Path,
    deadline: float | None = None,
    on_shard: Callable[[Path, int], None] | None = None,
) -> list[Path]:
    """Write ``features_<shard name>`` for each generation shard not yet done (before
    ``deadline``, a ``time.monotonic()`` value); returns every features file now present."""
    features_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for path in shard_paths:
        out = features_file(features_dir, path)
        if not out.exists():
            if deadline is not None and time.monotonic() > deadline:
                break
            rows = []
            for prompt, output in read_token_shard(path):
                ids = prompt.tolist() + output.tolist()
                rows.append((torch.tensor(ids, dtype=torch.int32), len(prompt)))
            feats = [target_features(target_model, ids.tolist()) for ids, _ in rows]
            saved = {
                "ids": [ids for ids, _ in rows],
                "prompt_len": [n for _, n in rows],
                "features": feats,
            }
            write_atomically(out, functools.partial(torch.save, saved))
            if on_shard is not None:
                on_shard(path, sum(len(ids) for ids, _ in rows))
        done.append(out)
    return done


FEATURE_KEYS = ("ids", "prompt_len", "features")


def load_feature_files(paths: Sequence[Path]) -> list[FeatureSequence]:
    """The sequences (of two tokens or more) of ``features_*.pt`` files; one that cannot be
    read, or whose shapes disagree, is a :class:`UserInputError` naming it."""
    sequences = []
    for path in paths:
        data = load_torch_file(path, "features file")
        lists = checked_lists(path, data, FEATURE_KEYS, "features file")
        for index, (ids, n, feats) in enumerate(zip(*lists, strict=True)):
            where = f"{path}: sequence {index}"
            if not isinstance(ids, torch.Tensor) or not isinstance(feats, torch.Tensor):
                raise UserInputError(f"{where}: ids and features must be tensors")
            if ids.dim() != 1 or feats.dim() != 2 or feats.shape[0] != len(ids):
                shapes = f"ids {tuple(ids.shape)}, features {tuple(feats.shape)}"
                raise UserInputError(f"{where}: needs one feature row per id, got {shapes}")
            if not isinstance(n, int) or not 0 <= n <= len(ids):
                raise UserInputError(f"{where}: prompt_len {n!r} is not in 0..{len(ids)}")
            if len(ids) >= 2:
                sequences.append(FeatureSequence(ids.long(), feats, n))
    return sequences


def split_by_prompt(
    sequences: Sequence[FeatureSequence], fraction: float, seed: int
) -> tuple[list[FeatureSequence], list[FeatureSequence]]:
    """(train, validation): validation takes ``fraction`` of the distinct prompts, with
    every sequence continuing them."""
    prompts = sorted({tuple(s.ids[: s.prompt_len].tolist()) for s in sequences})
    random.Random(seed).shuffle(prompts)
    held = set(prompts[: max(1, round(fraction * len(prompts)))])
    val = [s for s in sequences if tuple(s.ids[: s.prompt_len].tolist()) in held]
    return [s for s in sequences if tuple(s.ids[: s.prompt_len].tolist()) not in held], val


def check_trainable(
    train: Sequence[FeatureSequence], num_held: int, holdout: float, num_steps: int
) -> None:
    """A :class:`UserInputError` when the split leaves no sequence to train on (else 0
    steps, and a draft of random weights saved as trained), or ``num_steps`` unrolls past
    the longest training sequence (a step there has no position to learn from)."""
    if not train:
        raise UserInputError(
            f"--holdout {holdout:g} holds out every prompt of the featurized data ({num_held} "
            "sequences), leaving none to train on (at least one prompt is held out): give "
            "more prompts or a smaller --holdout"
        )
    longest = max(len(s.ids) for s in train)
    if num_steps > longest - 1:
        raise UserInputError(
            f"--steps {num_steps}: the longest training sequence has {longest} tokens, so a "
            f"step past {longest - 1} has no position to learn from; give --steps "
            f"{longest - 1} or fewer"
        )


def _batch(
    net: FeatureDraftNet, seqs: Sequence[FeatureSequence]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(draft ids B×L, features B×L×d, target's kept-token argmax B×L, lengths B)."""
    length, width = max(len(s.ids) for s in seqs), net.config.hidden_size
    ids = torch.zeros(len(seqs), length, dtype=torch.long)
    feats = torch.zeros(len(seqs), length, width)
    for row, s in enumerate(seqs):
        ids[row, : len(s.ids)] = net.target_to_draft[s.ids]
        feats[row, : len(s.ids)] = s.features.float()
    with torch.no_grad():
        labels = net.head_logits(feats).argmax(-1)
    lengths = torch.tensor([len(s.ids) for s in seqs])
    return ids, feats, labels, lengths


def batch_loss(
    net: FeatureDraftNet, seqs: Sequence[FeatureSequence], settings: FeatureTrainSettings
) -> tuple[torch.Tensor, list[float]]:
    """Summed loss over the unrolled steps, and each step's top-1 agreement (NaN for a step
    past every sequence of the batch: it adds nothing to the loss)."""
    ids, feats, labels, lengths = _batch(net, seqs)
    base = torch.arange(feats.shape[1] - 1)
    total = torch.zeros(())
    agreement = []
    for step, pred in enumerate(net.unrolled(feats, ids, settings.num_steps), 1):
        valid = (base[None] + step) < lengths[:, None]
        if not bool(valid.any()):  # a mean over no position would make the loss NaN
            agreement.append(math.nan)
            continue
        target_pos = (base + step).clamp(max=feats.shape[1] - 1)
        logits = net.head_logits(pred[valid])
        wanted = labels[:, target_pos][valid]
        total = total + F.cross_entropy(logits, wanted)
        total = total + settings.feature_weight * F.smooth_l1_loss(
            pred[valid], feats[:, target_pos][valid]
        )
        agreement.append(float((logits.argmax(-1) == wanted).float().mean()))
    return total, agreement


def evaluate(
    net: FeatureDraftNet, seqs: Sequence[FeatureSequence], settings: FeatureTrainSettings
) -> list[float]:
    """Mean top-1 agreement per unrolled step over ``seqs``' batches of 8 that reach it
    (NaN for a step past every sequence)."""
    net.eval()
    sums, counts = [0.0] * settings.num_steps, [0] * settings.num_steps
    batches = [seqs[i : i + 8] for i in range(0, len(seqs), 8)]
    with torch.no_grad():
        for chunk in batches:
            for i, value in enumerate(batch_loss(net, chunk, settings)[1]):
                if not math.isnan(value):
                    sums[i], counts[i] = sums[i] + value, counts[i] + 1
    net.train()
    return [total / count if count else math.nan for total, count in zip(sums, counts, strict=True)]


def train_feature_draft(
    net: FeatureDraftNet,
    train: Sequence[FeatureSequence],
    settings: FeatureTrainSettings,
    on_step: Callable[[int, int, float, list[float]], None] | None = None,
    checkpoint: Checkpointer | None = None,
) -> int:
    """AdamW with linear warm-up and cosine decay over ``epochs`` (or the time budget,
    whichever ends first: the decay then follows elapsed time); returns steps run (a
    resumed run's included). ``checkpoint`` keeps the training's checkpoint and resumes
    the one it holds, and gives the clock the time budget reads (:class:`Checkpointer`;
    default: none kept)."""
    run = Checkpointer() if checkpoint is None else checkpoint
    ordered = sorted(train, key=lambda s: len(s.ids))  # batches of similar length
    size = settings.sequences_per_batch
    batches = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    total_steps = settings.epochs * len(batches)
    optimizer = torch.optim.AdamW(
        [p for p in net.parameters() if p.requires_grad], lr=settings.learning_rate
    )
    run.start(net, optimizer, None, total_steps)
    net.train()
    rng = random.Random(settings.seed)
    with run.saved_on_stop():
        for index in run.batch_order(settings.epochs, len(batches), rng, carried=True):
            lr = _learning_rate(settings, run.step, total_steps, run.elapsed_s())
            if lr is None:
                break
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss, agreement = batch_loss(net, batches[index], settings)
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            run.changing()
            optimizer.step()
            run.step_done()
            if on_step is not None:
                on_step(run.step, total_steps, float(loss.detach()), agreement)
    return run.step


def _learning_rate(
    settings: FeatureTrainSettings, step: int, total_steps: int, elapsed_s: float
) -> float | None:
    """The learning rate of step ``step`` of ``total_steps`` once ``elapsed_s`` of the time
    budget is spent: a linear warm-up over the first ``warmup_fraction`` of the steps, then
    a cosine over the steps, or over the time budget once it binds (its spent share past
    the steps' after this one: the run is behind the budget's pace); ``None`` once either
    is all spent. By step alone while the budget does not bind, so that a run is the same
    run whatever the clock, resumed or not (the clock's share, always the further on at
    the first step, set the first rates, and two runs of one seed differed)."""
    progress = step / total_steps
    if settings.time_budget_s is not None:
        spent = elapsed_s / settings.time_budget_s
        if spent >= 1.0 or spent > (step + 1) / total_steps:  # behind its pace: it binds
            progress = spent
    if progress >= 1.0:
        return None
    warm = min(1.0, (step + 1) / (settings.warmup_fraction * total_steps))
    return settings.learning_rate * warm * 0.5 * (1 + math.cos(math.pi * progress))
