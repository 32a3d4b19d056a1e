"""Distillation: batched generation equals unbatched greedy, vocabulary choice, training."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from edgespec.datasets.prompts import Prompt
from edgespec.learn.drafts.distill import (
    DraftArchitecture,
    TrainSettings,
    batch_loss,
    init_draft,
    train_draft,
)
from edgespec.learn.drafts.distill_data import (
    GenerationSettings,
    generate_batch,
    generate_distillation_data,
    plan_batches,
)
from edgespec.learn.drafts.samples import Sample, choose_kept_tokens, load_shards, token_ids
from tests.models.tiny import SPECIAL, VOCAB, tiny_target


class _Tok:
    """Whitespace tokenizer over integers: "5 6 7" → [5, 6, 7]."""

    bos_token_id = 2
    eos_token_id = 1
    pad_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [int(t) for t in text.split()]}


def test_left_padded_batch_generation_equals_unbatched_greedy() -> None:
    model = tiny_target()
    prompts = [[2, 5, 9, 11, 30], [2, 7], [2, 40, 41, 42]]
    settings = SimpleNamespace(max_new_tokens=10, top_k=4)
    out = generate_batch(model, prompts, pad_id=0, eos_ids=set(), settings=settings)
    for row, ids in enumerate(prompts):
        alone = model.generate(
            torch.tensor([ids]), max_new_tokens=10, do_sample=False, pad_token_id=0
        )
        assert out["output_ids"][row].tolist() == alone[0, len(ids) :].tolist()
        assert out["topk_ids"][row].shape == (10, 4)
        assert out["topk_ids"][row][:, 0].tolist() == out["output_ids"][row].tolist()


def test_shards_are_written_and_resumed(tmp_path: Path) -> None:
    model = tiny_target()
    prompts = [
        Prompt(f"p{i}", "toy", " ".join(str(3 + i + j) for j in range(3 + i))) for i in range(5)
    ]
    settings = GenerationSettings(batch_size=2, max_prompt_tokens=4, max_new_tokens=6, top_k=3)
    calls: list[int] = []
    done = generate_distillation_data(
        model, _Tok(), prompts, tmp_path, settings, lambda i, n, s: calls.append(i)
    )
    assert done == 3 and calls == [1, 2, 3]
    samples = load_shards(tmp_path)
    assert len(samples) == 5
    assert all(len(s.prompt_ids) <= 4 and int(s.prompt_ids[0]) == 2 for s in samples)
    again: list[int] = []
    generate_distillation_data(
        model, _Tok(), prompts, tmp_path, settings, lambda i, n, s: again.append(i)
    )
    assert again == []


def test_load_shards_errors_on_an_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no distillation shards"):
        load_shards(tmp_path)


def test_plan_batches_covers_every_prompt_once() -> None:
    prompts = [Prompt(str(i), "toy", "") for i in range(10)]
    batches = plan_batches(prompts, list(range(10, 0, -1)), batch_size=3, seed=1)
    assert sorted(i for b in batches for i in b) == list(range(10))
    assert all(len(b) <= 3 for b in batches)


def _sample(prompt: list[int], output: list[int]) -> Sample:
    t = torch.tensor(output)
    return Sample(torch.tensor(prompt), t, t[:, None], torch.zeros(len(output), 1))


def test_choose_kept_tokens_orders_by_weighted_frequency() -> None:
    samples = [_sample([2, 9, 9, 9], [5, 7]), _sample([2, 9], [5])]
    # 9: 4 prompt hits → 4; 5: 2 output hits → 8; 7: 4; 2: 2
    assert choose_kept_tokens(token_ids(samples), 3, always=[1]) == [1, 5, 7]
    assert choose_kept_tokens(token_ids(samples), 10) == [5, 7, 9, 2]


def test_training_reduces_loss_and_learns_a_toy_continuation() -> None:
    torch.manual_seed(0)
    embeddings = torch.randn(VOCAB, 24)
    kept = list(range(VOCAB))
    arch = DraftArchitecture(
        num_kept_tokens=VOCAB, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32
    )
    draft = init_draft(embeddings, kept, arch, SPECIAL, "tiny")
    samples = [_sample([2, 10 + i, 11 + i], [12 + i, 13 + i, 14 + i]) for i in range(8)]
    settings = TrainSettings(epochs=60, tokens_per_step=64, learning_rate=1e-2, warmup_steps=2)
    with torch.no_grad():
        before, _, _ = batch_loss(draft, samples, settings)
    agreements: list[float] = []
    train_draft(draft, samples, settings, lambda step, total, loss, agree: agreements.append(agree))
    with torch.no_grad():
        after, correct, counted = batch_loss(draft, samples, settings)
    assert float(after) < 0.25 * float(before)
    assert correct == counted == 24


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"learning_rate": float("inf")}, "learning_rate must be a finite number > 0, got inf"),
        ({"learning_rate": float("nan")}, "learning_rate must be a finite number > 0, got nan"),
        ({"learning_rate": 0.0}, "learning_rate must be a finite number > 0, got 0.0"),
        ({"learning_rate": -1e-3}, "learning_rate must be a finite number > 0, got -0.001"),
        ({"weight_decay": -0.1}, "weight_decay must be a finite number >= 0, got -0.1"),
        ({"weight_decay": float("nan")}, "weight_decay must be a finite number >= 0, got nan"),
        ({"weight_decay": float("-inf")}, "weight_decay must be a finite number >= 0, got -inf"),
    ],
)
def test_train_settings_refuse_a_bad_rate_built_directly(
    change: dict[str, float], message: str
) -> None:
    """Was accepted: only the CLI flags refused inf and nan."""
    with pytest.raises(ValueError) as error:
        TrainSettings(**change)  # type: ignore[arg-type]
    assert str(error.value) == message
    assert TrainSettings(learning_rate=1e-9, weight_decay=0.0).weight_decay == 0.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epochs": 0}, "epochs must be >= 1, got 0"),
        ({"tokens_per_step": 0}, "tokens_per_step must be >= 1, got 0"),
        ({"tokens_per_step": -8}, "tokens_per_step must be >= 1, got -8"),
        ({"warmup_steps": -1}, "warmup_steps must be a finite number >= 0, got -1"),
        ({"soft_weight": float("nan")}, "soft_weight must be a finite number >= 0, got nan"),
        ({"soft_weight": -0.5}, "soft_weight must be a finite number >= 0, got -0.5"),
        ({"prompt_weight": float("nan")}, "prompt_weight must be a finite number >= 0, got nan"),
        ({"prompt_weight": float("inf")}, "prompt_weight must be a finite number >= 0, got inf"),
    ],
)
def test_train_settings_refuse_a_bad_count_or_loss_weight(
    change: dict[str, float], message: str
) -> None:
    """Was accepted: a NaN loss weight made every loss NaN, 0 tokens per step or a
    negative warm-up trained nothing or nonsense."""
    with pytest.raises(ValueError) as error:
        TrainSettings(**change)  # type: ignore[arg-type]
    assert str(error.value) == message
    edge = TrainSettings(epochs=1, tokens_per_step=1, warmup_steps=0, soft_weight=0.0,
                         prompt_weight=0.0)  # fmt: skip
    assert (edge.warmup_steps, edge.soft_weight, edge.prompt_weight) == (0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (float("nan"), "time_budget_s must be a finite number > 0, got nan"),
        (float("inf"), "time_budget_s must be a finite number > 0, got inf"),
        (0.0, "time_budget_s must be a finite number > 0, got 0.0"),
        (-60.0, "time_budget_s must be a finite number > 0, got -60.0"),
    ],
)
def test_train_settings_refuse_a_bad_time_budget(budget: float, message: str) -> None:
    """Was accepted: NaN made every learning rate of the cosine schedule NaN."""
    with pytest.raises(ValueError) as error:
        TrainSettings(time_budget_s=budget)
    assert str(error.value) == message
    assert TrainSettings().time_budget_s is None  # no budget
    assert TrainSettings(time_budget_s=1e-3).time_budget_s == 1e-3
