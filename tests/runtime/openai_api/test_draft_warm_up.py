"""The endpoint warms a draft model up before it listens, on a drafter made as a request's
is; not prompt lookup (no model), a llama.cpp draft (each request's drafter has a context
of its own) or a centralized endpoint (no drafting)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import edgespec.runtime.backends.warm_up as warm_up
import edgespec.runtime.openai_api.decoding as decoding
from edgespec.runtime.backends.llamacpp_context import LlamaCppSettings
from edgespec.runtime.backends.llamacpp_draft import LlamaCppDraftModel
from edgespec.runtime.openai_api.serve import _warm_up_draft

MODEL = object()
LLAMA = LlamaCppDraftModel(
    LlamaCppSettings(model_path=Path("x.gguf"), sequences=1, context_tokens=8)
)


@pytest.mark.parametrize(
    ("drafts", "model", "warmed"),
    [(True, MODEL, True), (True, None, False), (True, LLAMA, False), (False, MODEL, False)],
    ids=["model", "lookup", "llama.cpp", "centralized"],
)
def test_which_drafts_are_warmed_up(
    drafts: bool, model: object, warmed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup: Any = SimpleNamespace(drafts=drafts, draft_model=model, vocab_size=64)
    calls: list[tuple[object, int]] = []
    monkeypatch.setattr(decoding, "request_drafter", lambda s: ("drafter of", s.draft_model))
    monkeypatch.setattr(warm_up, "warm_up_drafter", lambda d, v: calls.append((d, v)))
    _warm_up_draft(setup)
    assert calls == ([(("drafter of", MODEL), 64)] if warmed else [])
