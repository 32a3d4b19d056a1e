"""The profiling grid's edge cases (edgespec.profiling.measure): exact splits of small totals,
validation boundaries, batch sizes, held-out configurations, prompts avoiding EOS."""

from __future__ import annotations

import pytest

from edgespec.profiling.grid import GridSpec, design_grid
from edgespec.profiling.measure import PromptSource, cold_draft_tokens, logit_rows

NO_RANDOM = {"num_random": 0, "num_mixed": 0, "num_test": 0}


def test_compute_configurations_split_totals_exactly_and_never_into_empty_requests() -> None:
    spec = GridSpec(cold_totals=(7, 2), new_tokens=(1,), totals=(10,), **NO_RANDOM)  # type: ignore[arg-type]
    compute = [c.entries for c in design_grid(spec) if c.category == "compute"]
    assert compute == [
        ((7, 0),), ((4, 0), (3, 0)), ((2, 0), (2, 0), (2, 0), (1, 0)), ((3, 0), (2, 0), (2, 0)),
        ((2, 0),), ((1, 0), (1, 0)), ((1, 0), (1, 0)), ((1, 0), (1, 0)),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"totals": (100,), "new_tokens": (1, 100)}, "every L_total must exceed every L_new"),
        ({"runs": 0}, "need runs >= 1 and warmup_runs >= 0"),
        ({"warmup_runs": -1}, "need runs >= 1 and warmup_runs >= 0"),
        ({"max_batch_size": 0}, "token counts and max_batch_size must be >= 1"),
        ({"cold_totals": (0, 5)}, "token counts and max_batch_size must be >= 1"),
    ],
)
def test_grid_spec_validation_boundaries(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        design_grid(GridSpec(**change))  # type: ignore[arg-type]


def test_random_batch_sizes_reach_max_batch_size() -> None:
    spec = GridSpec(
        memory_batch_sizes=(1,), max_batch_size=2, num_random=10, num_mixed=10, num_test=0
    )
    sizes = {len(c.entries) for c in design_grid(spec) if c.category != "compute"}
    assert sizes == {1, 2}


def test_a_single_request_mixed_batch_may_stay_uncached() -> None:
    # a batch of one cannot mix cached and uncached requests: it is not forced to be cached
    spec = GridSpec(max_batch_size=1, num_random=0, num_mixed=30, num_test=0)
    mixed = [c.entries for c in design_grid(spec) if c.category == "mixed"]
    assert len(mixed) == 10 and all(len(e) == 1 for e in mixed)
    assert any(e[0][1] == 0 for e in mixed) and any(e[0][1] > 0 for e in mixed)


def test_held_out_configurations_come_from_another_random_stream() -> None:
    grid = design_grid(GridSpec())
    train = {c.entries for c in grid if c.split == "train"}
    test = [c.entries for c in grid if c.split == "test"]
    assert len(test) == 50 and not train & set(test)


def test_prompt_tokens_avoid_eos_within_the_vocabulary() -> None:
    assert PromptSource(vocab_size=2, seed=0, avoid=frozenset({1})).tokens(16) == (0,) * 16
    assert set(PromptSource(vocab_size=3, seed=0, avoid=frozenset({2})).tokens(30)) == {0, 1}


def test_logit_rows_follow_the_measuring_protocol() -> None:
    # a cold entry drafts min(4, L_new // 2) of its tokens; logits for those + 1
    assert [cold_draft_tokens(n) for n in (1, 3, 8, 9, 300)] == [0, 1, 4, 4, 4]
    assert logit_rows((300, 0)) == 5 and logit_rows((1, 0)) == 1
    # a follow-up: one committed token + L_new - 1 drafted, logits for all L_new
    assert logit_rows((20, 205)) == 20 and logit_rows((1, 99)) == 1
