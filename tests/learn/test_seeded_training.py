"""Each trainer seeds itself and nothing else: its result is the same whatever state the
caller's torch generator is in, and after it the caller's generator draws what it would
have drawn without the call (no global seeding)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from edgespec.learn.awc.train import AwcTrainSettings, train_wc_dnn  # noqa: E402
from edgespec.learn.drafts.distill import (  # noqa: E402
    DraftArchitecture,
    TrainSettings,
    init_draft,
    train_draft,
)
from edgespec.learn.stop.train import MlpSettings, train_mlp  # noqa: E402
from edgespec.learn.wisv.train import TrainSettings as HeadSettings  # noqa: E402
from edgespec.learn.wisv.train import build_instances, split_episodes, train_head  # noqa: E402
from tests.learn.awc.test_train import _synthetic as awc_data  # noqa: E402
from tests.learn.drafts.test_checkpoint import SAMPLES  # noqa: E402
from tests.learn.stop.test_train import separable  # noqa: E402
from tests.learn.wisv.test_train import DRAFT, TARGET  # noqa: E402
from tests.learn.wisv.test_train import synthetic as wisv_data  # noqa: E402
from tests.models.tiny import SPECIAL, VOCAB  # noqa: E402


def _wc_dnn() -> list[Any]:
    net, _ = train_wc_dnn(awc_data(4, 8, 0), AwcTrainSettings(width=8, epochs=2, seed=3))
    return [p.detach().clone() for p in net.parameters()]


def _stop_mlp() -> list[Any]:
    settings = MlpSettings(hidden=(8, 4), dropout=0.2, max_epochs=2, seed=3)
    trained = train_mlp(separable(64, 1), separable(32, 2), settings)
    return [p.detach().clone() for p in trained.network.parameters()]


def _head() -> list[Any]:
    data = wisv_data()
    episodes, _ = split_episodes(data, 0.25, 0)
    train = build_instances(data, episodes, draws=2, budget="kappa-critical", seed=0)
    trained = train_head(train, DRAFT, TARGET, HeadSettings(width=8, epochs=2, seed=3))
    return [p.detach().clone() for p in trained.net.parameters()]


def _draft() -> list[Any]:
    generator = torch.Generator().manual_seed(0)  # the draft's start, the same in every call
    arch = DraftArchitecture(VOCAB, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32)
    embeddings = torch.randn(VOCAB, 24, generator=generator)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        draft = init_draft(embeddings, list(range(VOCAB)), arch, SPECIAL, "tiny")
    settings = TrainSettings(epochs=2, tokens_per_step=16, learning_rate=1e-2, seed=3)
    train_draft(draft, SAMPLES, settings)
    return [p.detach().clone() for p in draft.parameters()]


TRAINERS: dict[str, Callable[[], list[Any]]] = {
    "wc-dnn": _wc_dnn,
    "stop-mlp": _stop_mlp,
    "wisv-head": _head,
    "draft": _draft,
}


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_a_trainer_seeds_itself_and_leaves_the_callers_generator(name: str) -> None:
    torch.manual_seed(11)
    expected_after = torch.rand(5)
    torch.manual_seed(11)
    first = TRAINERS[name]()
    assert torch.equal(torch.rand(5), expected_after)
    torch.manual_seed(99)  # another caller's state: the same training
    second = TRAINERS[name]()
    assert len(first) == len(second) > 0
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
