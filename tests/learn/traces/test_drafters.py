"""The drafter `edgespec trace` runs for its draft flags, and the name its records carry."""

from __future__ import annotations

import pytest

from edgespec.errors import UserInputError
from edgespec.learn.traces.drafters import DraftChoice, drafter_for
from edgespec.runtime.backends.ngram import NgramDrafter


def test_prompt_lookup_alone_is_the_ngram_drafter_named_as_given() -> None:
    drafter, model, name = drafter_for(DraftChoice("ngram"), None, stops=False)
    assert isinstance(drafter, NgramDrafter) and model is None and name == "ngram"


def test_a_stop_predictor_needs_a_drafter_that_can_stop() -> None:
    with pytest.raises(UserInputError) as info:
        drafter_for(DraftChoice("ngram"), None, stops=True)
    assert str(info.value) == (
        "--stop-predictor: NgramDrafter cannot draft with a stop predictor (only the neural "
        "chain drafters TransformersDraft and HybridDraft can)"
    )
