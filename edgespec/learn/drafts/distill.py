"""Distil a small trimmed-vocabulary draft from the target's greedy continuations.

Data: shards written by :mod:`edgespec.learn.drafts.distill_data` (prompt ids, the target's greedy
continuation, the target's top-k logits at each continuation position), read as
:class:`~edgespec.learn.drafts.samples.Sample` s by :mod:`edgespec.learn.drafts.samples`.

Loss per sequence (all over the draft's K kept tokens; ids outside them are ignored):

- hard: cross-entropy to the target's greedy token at each continuation position — what a
  greedy verifier accepts;
- soft (weight ``soft_weight``): cross-entropy to the target's top-k distribution at the same
  positions, renormalised over the kept tokens among the top-k;
- prompt LM (weight ``prompt_weight``): next-token cross-entropy on the prompt text itself,
  a cheap extra language-modelling signal.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from edgespec.learn.drafts.checkpointing import Checkpointer
from edgespec.learn.drafts.samples import Sample
from edgespec.learn.settings_checks import (
    check_at_least_one,
    check_non_negative,
    check_positive,
    check_time_budget,
)
from edgespec.models.seeding import torch_seeded
from edgespec.models.trimmed import TrimmedDraftConfig, TrimmedVocabDraft


@dataclass(frozen=True, slots=True)
class DraftArchitecture:
    """Size of the distilled draft (Llama blocks)."""

    num_kept_tokens: int = 8192
    hidden_size: int = 256
    num_layers: int = 3
    num_heads: int = 4
    intermediate_size: int = 768
    max_positions: int = 2048


@dataclass(frozen=True, slots=True)
class TrainSettings:
    """Optimisation settings. ``time_budget_s`` (``None``: no budget; else a finite number
    of seconds > 0) ends training early (checked per step); the cosine learning-rate decay
    then follows elapsed time so it still finishes its decay. A bad field (``epochs`` or
    ``tokens_per_step`` < 1, a negative or non-finite ``warmup_steps`` or loss weight) is a
    ``ValueError`` naming it and its value."""

    epochs: int = 4
    tokens_per_step: int = 8192
    learning_rate: float = 2e-3
    weight_decay: float = 0.01
    warmup_steps: int = 20
    soft_weight: float = 0.5
    prompt_weight: float = 0.2
    seed: int = 0
    time_budget_s: float | None = None

    def __post_init__(self) -> None:
        check_at_least_one(epochs=self.epochs, tokens_per_step=self.tokens_per_step)
        check_positive("learning_rate", self.learning_rate)
        check_non_negative("weight_decay", self.weight_decay)
        check_non_negative("warmup_steps", self.warmup_steps)
        check_non_negative("soft_weight", self.soft_weight)
        check_non_negative("prompt_weight", self.prompt_weight)
        check_time_budget(self.time_budget_s)


def init_draft(
    target_embeddings: torch.Tensor,
    kept: Sequence[int],
    arch: DraftArchitecture,
    special_ids: dict[str, int],
    target_name: str,
) -> TrimmedVocabDraft:
    """A fresh draft whose embeddings are the target's (kept rows) projected onto their top
    principal directions, rescaled to std 0.05; the "other" row is their mean. There are at
    most min(kept rows, target hidden size) directions: when the training data yields fewer
    kept tokens than the draft's hidden size, the columns past them start at zero."""
    config = TrimmedDraftConfig(
        draft_token_ids=list(kept),
        target_name=target_name,
        vocab_size=int(target_embeddings.shape[0]),
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_heads,
        max_position_embeddings=arch.max_positions,
        tie_word_embeddings=False,
        **special_ids,
    )
    draft = TrimmedVocabDraft(config)
    rows = target_embeddings[torch.tensor(list(kept))].float()
    centred = rows - rows.mean(dim=0, keepdim=True)
    _, _, v = torch.linalg.svd(centred, full_matrices=False)
    projected = centred @ v[: arch.hidden_size].T
    projected = projected * (0.05 / projected.std())
    projected = torch.nn.functional.pad(projected, (0, arch.hidden_size - projected.shape[1]))
    with torch.no_grad():
        weight = draft.model.embed_tokens.weight
        weight[: len(kept)] = projected
        weight[len(kept)] = projected.mean(dim=0)
    return draft


def _batches(samples: Sequence[Sample], tokens_per_step: int) -> list[list[int]]:
    """The samples in batches of similar length, at most ``tokens_per_step`` padded
    tokens each, shortest first (a loop shuffles their order)."""
    order = sorted(
        range(len(samples)), key=lambda i: len(samples[i].prompt_ids) + len(samples[i].output_ids)
    )
    batches: list[list[int]] = []
    current: list[int] = []
    width = 0
    for i in order:
        length = len(samples[i].prompt_ids) + len(samples[i].output_ids)
        if current and max(width, length) * (len(current) + 1) > tokens_per_step:
            batches.append(current)
            current, width = [], 0
        current.append(i)
        width = max(width, length)
    if current:
        batches.append(current)
    return batches


def batch_loss(
    draft: TrimmedVocabDraft, samples: Sequence[Sample], settings: TrainSettings
) -> tuple[torch.Tensor, int, int]:
    """(loss, continuation positions with an in-vocabulary label, of which predicted right)."""
    seqs = [torch.cat([s.prompt_ids, s.output_ids]) for s in samples]
    width = max(len(s) for s in seqs)
    num_kept = draft.num_kept
    input_ids = torch.zeros((len(seqs), width), dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for row, seq in enumerate(seqs):
        input_ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    logits, _ = draft.trimmed_forward(input_ids, attention_mask=mask, use_cache=False)
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    labels = draft.to_draft_ids(input_ids)
    hard_terms, soft_terms, lm_terms = [], [], []
    correct = counted = 0
    for row, s in enumerate(samples):
        num_prompt, num_out = len(s.prompt_ids), len(s.output_ids)
        pos = torch.arange(num_prompt - 1, num_prompt - 1 + num_out)
        top = draft.to_draft_ids(s.topk_ids)
        # The target's argmax: the generated token for continuations, and for teacher-forced
        # text (where the next token is the text's, not the target's) what it would say.
        target = top[:, 0]
        valid = target < num_kept
        lp = log_probs[row, pos]
        if bool(valid.any()):
            hard_terms.append(-lp[valid].gather(1, target[valid, None]).squeeze(1))
            correct += int((lp[valid].argmax(-1) == target[valid]).sum())
            counted += int(valid.sum())
        weights = torch.softmax(s.topk_logits.masked_fill(top >= num_kept, float("-inf")), dim=-1)
        weights = torch.nan_to_num(weights, nan=0.0)
        soft_terms.append(-(weights * lp.gather(1, top.clamp(max=num_kept - 1))).sum(-1))
        prompt_pos = torch.arange(0, num_prompt - 1)
        prompt_target = labels[row, prompt_pos + 1]
        ok = prompt_target < num_kept
        if bool(ok.any()):
            lm_terms.append(
                -log_probs[row, prompt_pos[ok]].gather(1, prompt_target[ok, None]).squeeze(1)
            )
    zero = logits.new_zeros(())
    hard = torch.cat(hard_terms).mean() if hard_terms else zero
    soft = torch.cat(soft_terms).mean() if soft_terms else zero
    lm = torch.cat(lm_terms).mean() if lm_terms else zero
    return hard + settings.soft_weight * soft + settings.prompt_weight * lm, correct, counted


def evaluate_agreement(
    draft: TrimmedVocabDraft, samples: Sequence[Sample], settings: TrainSettings
) -> float:
    """Top-1 agreement with the target's greedy token over all continuation positions
    (positions whose target token is outside the kept vocabulary count as misses)."""
    draft.eval()  # type: ignore[no-untyped-call]
    correct = total = 0
    batches = _batches(samples, settings.tokens_per_step)
    random.Random(0).shuffle(batches)  # the order the sums were always taken in
    with torch.no_grad():
        for batch in batches:
            _, c, _ = batch_loss(draft, [samples[i] for i in batch], settings)
            correct += c
            total += sum(len(samples[i].output_ids) for i in batch)
    return correct / total if total else 0.0


def train_draft(
    draft: TrimmedVocabDraft,
    samples: Sequence[Sample],
    settings: TrainSettings,
    progress: Callable[[int, int, float, float], None] | None = None,
    checkpoint: Checkpointer | None = None,
) -> int:
    """Train in place with AdamW (linear warm-up, cosine decay); returns steps taken (a
    resumed run's included).

    ``progress(step, total_steps, loss, train_agreement)`` is called after every step.
    ``checkpoint`` keeps the training's checkpoint and resumes the one it holds, and
    gives the clock the time budget reads (:class:`Checkpointer`; default: none kept).
    Seeded with ``settings.seed``; the caller's torch generators untouched.
    """
    with torch_seeded(settings.seed):
        return _train_draft(draft, samples, settings, progress, checkpoint)


def _train_draft(
    draft: TrimmedVocabDraft,
    samples: Sequence[Sample],
    settings: TrainSettings,
    progress: Callable[[int, int, float, float], None] | None,
    checkpoint: Checkpointer | None,
) -> int:
    run = Checkpointer() if checkpoint is None else checkpoint
    batches = _batches(samples, settings.tokens_per_step)
    total = max(1, len(batches) * settings.epochs)
    optimizer = _optimizer(draft, settings)
    factor = functools.partial(_lr_factor, settings, total, run.elapsed_s)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    run.start(draft, optimizer, scheduler, total)
    budget_s = settings.time_budget_s
    draft.train()
    with run.saved_on_stop():
        order = run.batch_order(settings.epochs, len(batches), random.Random(settings.seed))
        for index in order:
            if budget_s is not None and run.elapsed_s() > budget_s:
                break
            batch = [samples[i] for i in batches[index]]
            loss, correct, counted = batch_loss(draft, batch, settings)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
            run.changing()
            optimizer.step()
            scheduler.step()
            run.step_done()
            if progress is not None:
                agreement = correct / counted if counted else 0.0
                progress(run.step, total, float(loss.detach()), agreement)
    draft.eval()  # type: ignore[no-untyped-call]
    return run.step


def _optimizer(draft: TrimmedVocabDraft, settings: TrainSettings) -> torch.optim.AdamW:
    """AdamW, no weight decay on norms and biases (parameters of one dimension)."""
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, param in draft.named_parameters():
        (no_decay if param.ndim < 2 or "norm" in name else decay).append(param)
    return torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": settings.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=settings.learning_rate,
    )


def _lr_factor(
    settings: TrainSettings, total: int, elapsed_s: Callable[[], float], step: int
) -> float:
    """The learning rate at ``step`` over the peak: a linear warm-up, then a cosine over
    whichever runs out first: the step schedule or the time budget (``elapsed_s()``)."""
    if step < settings.warmup_steps:
        return (step + 1) / settings.warmup_steps
    frac = (step - settings.warmup_steps) / max(1, total - settings.warmup_steps)
    if settings.time_budget_s:
        frac = max(frac, elapsed_s() / settings.time_budget_s)
    return 0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, frac)))
