"""The default profiling grid (edgespec.profiling.measure) follows WISP Appendix C; a grid
whose totals leave no cache and a duplicate profiling prompt are refused."""

from __future__ import annotations

import pytest

from edgespec.errors import UserInputError
from edgespec.profiling.grid import GridSpec, design_grid
from edgespec.profiling.measure import PromptSource


def test_default_grid_follows_wisp_appendix_c() -> None:
    grid = design_grid(GridSpec())
    cats: dict[tuple[str, str], int] = {}
    for c in grid:
        cats[(c.category, c.split)] = cats.get((c.category, c.split), 0) + 1
    assert cats[("compute", "train")] == 20  # 5 totals x (single, split-2, split-4, uneven)
    assert cats[("memory", "train")] == 48  # 6 L_new x 4 L_total x batch sizes {1, 4}
    assert sum(n for (_, split), n in cats.items() if split == "train") == 118
    assert sum(n for (_, split), n in cats.items() if split == "test") == 50
    for c in grid:
        assert 1 <= len(c.entries) <= 16
        if c.category == "compute":
            assert all(cached == 0 for _, cached in c.entries)
            assert 1200 <= sum(n for n, _ in c.entries) <= 2000
        if c.category == "memory":
            (new, cached), size = c.entries[0], len(c.entries)
            assert new in (1, 5, 10, 20, 50, 100) and new + cached in (500, 1000, 1500, 2000)
            assert size in (1, 4)
        if c.category == "mixed" and len(c.entries) > 1:
            assert any(cached == 0 for _, cached in c.entries) or len(c.entries) == 1
            assert any(cached > 0 for _, cached in c.entries)
    assert design_grid(GridSpec()) == grid  # deterministic


def test_grid_spec_rejects_totals_without_cache() -> None:
    with pytest.raises(ValueError, match="every L_total must exceed every L_new"):
        design_grid(GridSpec(totals=(50,), new_tokens=(1, 100)))


def test_prompt_source_refuses_a_duplicate() -> None:
    source = PromptSource(vocab_size=1, seed=0, max_draws=5)
    assert source.take(3) == (0, 0, 0)
    with pytest.raises(UserInputError) as info:
        source.take(3)
    assert str(info.value) == (
        "duplicate profiling prompt of 3 tokens: 5 draws over the target's 1-token vocabulary "
        "gave no new one (a profile never repeats a prompt, WISP App. C); the grid needs more "
        "distinct prompts than this vocabulary has"
    )
