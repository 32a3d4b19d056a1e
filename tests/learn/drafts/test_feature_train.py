"""Feature-draft training data and training loop, on a tiny target built in the test."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.datasets.prompts import Prompt
from edgespec.errors import UserInputError
from edgespec.learn.drafts import feature_train as ft
from edgespec.learn.drafts.distill_data import GenerationSettings, generate_distillation_data
from edgespec.learn.drafts.draft_progress import shown
from edgespec.models.feature_draft import (
    FeatureDraftConfig,
    FeatureDraftNet,
    load_feature_draft,
    target_rows,
)
from tests.models.tiny import VOCAB, tiny_target


class _Tok:
    bos_token_id, eos_token_id, pad_token_id = 2, 1, 0

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": [2, *(int(t) for t in text.split())]}


def _shards(directory: Path, model: Any, count: int = 12) -> list[Path]:
    prompts = [
        Prompt(f"p{i}", "toy", " ".join(str(3 + (i * 7 + j) % 40) for j in range(4 + i % 3)))
        for i in range(count)
    ]
    settings = GenerationSettings(batch_size=4, max_prompt_tokens=8, max_new_tokens=16, top_k=2)
    generate_distillation_data(model, _Tok(), prompts, directory, settings)
    return sorted(directory.glob("shard_*.pt"))


def test_features_are_the_decoders_last_hidden_state_and_resume(tmp_path: Path) -> None:
    model = tiny_target()
    shards = _shards(tmp_path / "gen", model)
    seen: list[str] = []
    done = ft.featurize_shards(
        model, shards, tmp_path / "f", None, lambda p, n: seen.append(p.name)
    )
    assert len(done) == len(shards) == len(seen)
    sequences = ft.load_feature_files(done)
    assert len(sequences) == 12
    s = sequences[0]
    with torch.no_grad():
        want = model.model(input_ids=s.ids[None]).last_hidden_state[0]
    torch.testing.assert_close(s.features.float(), want, atol=2e-3, rtol=2e-3)
    again: list[str] = []
    ft.featurize_shards(model, shards, tmp_path / "f", None, lambda p, n: again.append(p.name))
    assert again == []  # every shard already done


def test_split_by_prompt_keeps_each_prompt_on_one_side() -> None:
    seqs = [
        ft.FeatureSequence(torch.tensor([2, p, 9, 9 + i]), torch.zeros(4, 2), 2)
        for p in range(3, 13)
        for i in range(2)
    ]
    train, val = ft.split_by_prompt(seqs, 0.2, seed=0)
    assert len(val) == 4 and len(train) == 16
    assert {int(s.ids[1]) for s in val}.isdisjoint({int(s.ids[1]) for s in train})


def test_training_raises_unrolled_agreement(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = tiny_target()
    shards = _shards(tmp_path / "gen", model, count=24)
    sequences = ft.load_feature_files(ft.featurize_shards(model, shards, tmp_path / "f"))
    kept = tuple(range(VOCAB))
    config = FeatureDraftConfig("tiny", VOCAB, 32, kept, num_heads=2, head_dim=8)
    net = FeatureDraftNet(config, *target_rows(model, kept))
    settings = ft.FeatureTrainSettings(num_steps=2, epochs=30, learning_rate=3e-3)
    before = ft.evaluate(net, sequences, settings)
    steps = ft.train_feature_draft(net, sequences, settings)
    after = ft.evaluate(net, sequences, settings)
    assert steps == 30 * 3
    assert after[0] > before[0] + 0.3 and after[1] > before[1] + 0.2, (before, after)


def test_train_feature_draft_command_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgespec.cli import main
    from edgespec.models import loading
    from edgespec.models.registry import resolve_model

    model = tiny_target()
    _shards(tmp_path / "gen", model)
    model.save_pretrained(tmp_path / "target")
    real = loading.load_model

    def load(name: Any, *args: Any, **kwargs: Any) -> Any:
        if str(name) == str(tmp_path / "target"):
            spec = resolve_model(str(name))
            return loading.LoadedModel(spec, model, _Tok())
        return real(name, *args, **kwargs)

    monkeypatch.setattr(loading, "load_model", load)
    argv = ["train", "feature-draft", "--target", str(tmp_path / "target"), "--out"]
    argv += [str(tmp_path / "fd"), "--data-dir", str(tmp_path / "gen"), "--features-dir"]
    argv += [str(tmp_path / "f"), "--kept-tokens", "20", "--epochs", "1", "--heads", "2"]
    assert main([*argv, "--head-dim", "8", "--intermediate-size", "16"]) == 0
    net = load_feature_draft(tmp_path / "fd", model)
    assert len(net.config.draft_token_ids) >= 20  # K most frequent + special tokens


def test_command_errors_name_the_bad_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgespec.cli import main

    argv = ["train", "feature-draft", "--out", str(tmp_path / "fd"), "--features-dir"]
    (tmp_path / "empty").mkdir()
    argv += [str(tmp_path / "f"), "--data-dir", str(tmp_path / "empty")]
    assert main(argv) == 2
    assert f"--data-dir {str(tmp_path / 'empty')!r} holds no shard_*.pt files" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"learning_rate": float("nan")}, "learning_rate must be a finite number > 0, got nan"),
        ({"learning_rate": float("inf")}, "learning_rate must be a finite number > 0, got inf"),
        ({"learning_rate": 0.0}, "learning_rate must be a finite number > 0, got 0.0"),
        ({"num_steps": 0}, "num_steps must be >= 1, got 0"),
        ({"sequences_per_batch": 0}, "sequences_per_batch must be >= 1, got 0"),
        ({"epochs": -1}, "epochs must be >= 1, got -1"),
        ({"warmup_fraction": 0.0}, "warmup_fraction must be in (0, 1], got 0.0"),
        ({"warmup_fraction": 1.5}, "warmup_fraction must be in (0, 1], got 1.5"),
        ({"warmup_fraction": float("nan")}, "warmup_fraction must be in (0, 1], got nan"),
        ({"feature_weight": -0.5}, "feature_weight must be a finite number >= 0, got -0.5"),
        ({"feature_weight": float("inf")}, "feature_weight must be a finite number >= 0, got inf"),
        ({"time_budget_s": float("nan")}, "time_budget_s must be a finite number > 0, got nan"),
        ({"time_budget_s": 0.0}, "time_budget_s must be a finite number > 0, got 0.0"),
        ({"time_budget_s": -60.0}, "time_budget_s must be a finite number > 0, got -60.0"),
    ],
)
def test_feature_train_settings_refuse_a_bad_field_built_directly(
    change: dict[str, float], message: str
) -> None:
    """Was accepted: a NaN budget or warm-up was silently ignored (``max``/``min`` with
    NaN), a zero one divided by zero, an infinite rate trained NaN weights."""
    with pytest.raises(ValueError) as error:
        ft.FeatureTrainSettings(**change)  # type: ignore[arg-type]
    assert str(error.value) == message
    edge = ft.FeatureTrainSettings(warmup_fraction=1.0, feature_weight=0.0, time_budget_s=1e-3)
    assert (edge.warmup_fraction, edge.feature_weight, edge.time_budget_s) == (1.0, 0.0, 1e-3)


@pytest.mark.parametrize("flag", ["--train-minutes", "--feature-minutes"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nan", "must be a finite number, got 'nan'"),
        ("0", "must be > 0, got 0"),
        ("1e308", "must be at most 10,000,000 minutes, got 1e+308"),  # x 60 was inf
    ],
)
def test_command_refuses_a_budget_that_is_not_a_positive_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    """Was accepted: NaN meant no budget, 0 divided by zero (--train-minutes)."""
    from edgespec.cli import main

    argv = ["train", "feature-draft", "--out", str(tmp_path / "fd"), "--data-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as stop:
        main([*argv, flag, value])
    assert stop.value.code == 2
    assert f"argument {flag}: {message}" in capsys.readouterr().err
    assert not (tmp_path / "fd").exists()


def _net() -> FeatureDraftNet:
    torch.manual_seed(0)
    config = FeatureDraftConfig("tiny", VOCAB, 32, tuple(range(VOCAB)), num_heads=2, head_dim=8)
    return FeatureDraftNet(config, *target_rows(tiny_target(), tuple(range(VOCAB))))


def _sequences(*lengths: int) -> list[ft.FeatureSequence]:
    g = torch.Generator().manual_seed(1)
    return [
        ft.FeatureSequence(
            torch.randint(3, VOCAB, (n,), generator=g), torch.randn(n, 32, generator=g), 2
        )
        for n in lengths
    ]


def test_a_step_past_a_batchs_sequences_adds_nothing_and_is_said_as_none() -> None:
    """A batch of 4-token sequences unrolled 5 steps: steps 4 and 5 have no position. Their
    mean over nothing made the loss NaN (shown as `loss nan`) and the agreement NaN."""
    net = _net()
    settings = ft.FeatureTrainSettings(num_steps=5)
    loss, agreement = ft.batch_loss(net, _sequences(4, 4), settings)
    shorter, _ = ft.batch_loss(net, _sequences(4, 4), ft.FeatureTrainSettings(num_steps=3))
    assert torch.isfinite(loss) and torch.equal(loss, shorter)
    assert [math.isnan(a) for a in agreement] == [False] * 3 + [True] * 2
    # held out: a step is the mean over the batches that reach it (8 short, then 1 long)
    held = ft.evaluate(net, _sequences(*[4] * 8, 7), settings)
    assert not any(math.isnan(a) for a in held)
    alone = ft.evaluate(net, _sequences(*[4] * 8, 7)[8:], settings)
    assert held[3:] == alone[3:]
    assert [shown(a, 3) for a in (0.5, math.nan)] == ["0.500", "-"]


def test_steps_past_the_longest_training_sequence_are_refused() -> None:
    train = _sequences(5, 9)
    ft.check_trainable(train, 3, 0.05, 8)
    with pytest.raises(UserInputError) as info:
        ft.check_trainable(train, 3, 0.05, 9)
    assert str(info.value) == (
        "--steps 9: the longest training sequence has 9 tokens, so a step past 8 has no "
        "position to learn from; give --steps 8 or fewer"
    )
    with pytest.raises(UserInputError, match=r"--holdout 0.5 holds out every prompt of the "):
        ft.check_trainable([], 3, 0.5, 2)


def test_the_learning_rate_warms_up_by_step_whatever_the_clock() -> None:
    """The warm-up read the time budget too: the first step's rate was the elapsed
    time's (lr · elapsed / budget / warm-up share), so two runs of one seed, or a run and
    its resumption, trained different drafts (max |diff| 3e-3 after 3,000 steps)."""
    settings = ft.FeatureTrainSettings(learning_rate=1e-3, warmup_fraction=0.1,
                                       time_budget_s=60.0)  # fmt: skip
    rates = [ft._learning_rate(settings, 0, 100, elapsed) for elapsed in (0.0, 0.01, 0.5)]
    assert rates == [1e-3 * 0.1] * 3  # (0 + 1) / 10 steps of warm-up, cos(0) = 1
    assert ft._learning_rate(settings, 9, 100, 0.3) == pytest.approx(
        1e-3 * 0.5 * (1 + math.cos(math.pi * 0.09))
    )  # warm by step 10 of 100: the cosine alone
    assert ft._learning_rate(settings, 50, 100, 45.0) == pytest.approx(
        1e-3 * 0.5 * (1 + math.cos(math.pi * 0.75))
    )  # past the warm-up the budget binds when it is further on
    assert ft._learning_rate(settings, 99, 100, 60.0) is None
