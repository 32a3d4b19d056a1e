"""The warm-ups before a process serves: the target's at a server's start (one cold start
of 8 tokens, ids within the vocabulary, and one decode step on its KV, nothing kept), a
drafter's before the endpoint listens (two greedy tokens after 8, then reset); what
comes after gives the same logits or tokens as without."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.logit_rows import HostRows

torch = pytest.importorskip("torch")

from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.backends.transformers_draft import TransformersDraft  # noqa: E402
from edgespec.runtime.backends.warm_up import (  # noqa: E402
    WARM_UP_TOKENS,
    warm_up,
    warm_up_drafter,
)
from edgespec.runtime.testing import VOCAB, tiny_llama  # noqa: E402


class Recording:
    """A backend that records each pass's items and returns one logit row per item."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.passes: list[list[ForwardItem]] = []

    def forward(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        self.passes.append(list(items))
        kv = f"kv-after-pass-{len(self.passes)}"
        rows = HostRows(np.zeros((1, self.vocab_size), np.float32))
        return [ForwardOutput(rows, kv) for _ in items]


@pytest.mark.parametrize(
    ("vocab_size", "ids"), [(1000, (1, 2, 3, 4, 5, 6, 7, 8)), (5, (1, 2, 3, 4, 0, 1, 2, 3))]
)
def test_a_cold_start_then_a_decode_step_on_its_kv(vocab_size: int, ids: tuple[int, ...]) -> None:
    backend: Any = Recording(vocab_size)
    warm_up(backend)
    assert WARM_UP_TOKENS == 8
    assert backend.passes == [
        [ForwardItem(None, 0, ids, 1)],
        [ForwardItem("kv-after-pass-1", 8, ids[:1], 1)],
    ]


def test_a_warmed_up_target_gives_the_same_logits() -> None:
    prompt = (5, 17, 3, 42, 8, 1)
    fresh = TransformersTarget(tiny_llama(seed=0), check_masks=False)
    warmed = TransformersTarget(tiny_llama(seed=0), check_masks=False)
    warm_up(warmed)
    got = [t.forward([ForwardItem(None, 0, prompt, 2)])[0] for t in (fresh, warmed)]
    assert np.array_equal(got[0].logits, got[1].logits) and got[0].logits.shape == (2, VOCAB)


class RecordingDrafter:
    """A drafter that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def propose(self, context: Sequence[int], gamma: int, temperature: float, rng: Any) -> Any:
        self.calls.append(("propose", tuple(context), gamma, temperature))

    def reset(self) -> None:
        self.calls.append(("reset",))


def test_a_drafter_drafts_two_greedy_tokens_then_forgets_them() -> None:
    drafter: Any = RecordingDrafter()
    warm_up_drafter(drafter, 5)
    assert drafter.calls == [("propose", (1, 2, 3, 4, 0, 1, 2, 3), 2, 0.0), ("reset",)]


def test_a_warmed_up_draft_model_drafts_the_same() -> None:
    context = (5, 17, 3, 42, 8, 1)
    rng = np.random.default_rng(0)
    fresh, warmed = TransformersDraft(tiny_llama(seed=1)), TransformersDraft(tiny_llama(seed=1))
    warm_up_drafter(warmed, VOCAB)
    got = [d.propose(context, 3, 0.0, rng).token_ids for d in (fresh, warmed)]
    assert got[0] == got[1] and len(got[0]) == 3
