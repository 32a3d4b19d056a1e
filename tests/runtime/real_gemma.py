"""The real target of the slow tests (EDGESPEC_SLOW=1): Gemma 3 270M, loaded once per call,
or the test skipped where it cannot be loaded (no package, no conversion)."""

from __future__ import annotations

import pytest

from edgespec.models.loading import LoadedModel


def gemma_or_skip() -> LoadedModel:
    """``load_model("gemma3-270m")``, or the calling test skipped saying why."""
    from edgespec.models.loading import load_model

    try:
        return load_model("gemma3-270m")
    except (ImportError, ValueError, OSError) as exc:
        pytest.skip(f"gemma3-270m not available: {exc}")
