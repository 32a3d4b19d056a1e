"""A new draft's random weights come from ``--seed`` alone: ``train draft`` seeded torch's
global generator (``torch.manual_seed``, a process-wide side effect) and drew the draft's
weights after whatever the target's load drew from it; now it draws them inside
``torch_seeded`` and leaves the caller's generator as it was."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from edgespec.learn.drafts.distill import DraftArchitecture
from edgespec.learn.drafts.draft_training import new_or_saved_draft
from edgespec.runtime.testing import tiny_llama

ARCH = DraftArchitecture(
    num_kept_tokens=16, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32
)


def _new_draft(seed: int) -> dict[str, torch.Tensor]:
    job = SimpleNamespace(training=SimpleNamespace(seed=seed), architecture=ARCH, target="t")
    target = SimpleNamespace(model=tiny_llama(), tokenizer=SimpleNamespace(eos_token_id=2))
    data = SimpleNamespace(kept=list(range(16)))
    draft = new_or_saved_draft(job, target, None, data)  # type: ignore[arg-type]
    return {name: t.detach().clone() for name, t in draft.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_new_drafts_weights_come_from_its_seed_alone() -> None:
    torch.manual_seed(123)
    first = _new_draft(7)
    torch.rand(1000)  # another draw before it (the target's load draws)
    state = torch.random.get_rng_state()
    assert _same(first, _new_draft(7))
    assert torch.equal(state, torch.random.get_rng_state())  # the caller's generator untouched
    assert not _same(first, _new_draft(8))
