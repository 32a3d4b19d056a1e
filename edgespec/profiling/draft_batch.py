"""The drafter timed batched, as Zhu et al.'s drafting server runs it (seed 001, §II-D).

:func:`measure_batched` times :meth:`BatchedDraftModel.draft` (the ``edgespec
drafting-server``'s model) over ``b`` sessions at once, for each ``b`` of
``--draft-batches`` and each context length: a cold call (fresh sessions, each one pass
over its context, then γ − 1 one-token passes, batched row by row) and a follow-up call
(each context grown by one fresh token: the KV cropped to its common prefix, one pass
over the rest, then γ − 1). A call is one :class:`~edgespec.profiling.draft.DraftSample`
(``batched``), its shape summed over every row of every pass, so Eq. 17 summed over the
passes, Σ (c₁·F_pass + c₂) = c₁·ΣF + c₂·passes, has each pass's FLOPs the sum over its
rows, as the drafting server's planner prices a batch. A (b, context) cell is measured
as a whole and handed to ``on_cell`` (the checkpoint), and a resumed run skips the cells
in ``done``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from time import perf_counter
from typing import Any

from edgespec.policies.estimator import BatchShape
from edgespec.profiling.draft import DraftSample, pass_shapes
from edgespec.profiling.measure import PromptSource
from edgespec.runtime.backends.base import common_prefix_length
from edgespec.runtime.edge.batched_draft import BatchedDraftModel, DraftState

Cell = tuple[int, int]
"""A (batch size, context tokens) the drafter is timed at."""


def follow_up_row(cached: Sequence[int], context: Sequence[int]) -> tuple[int, int]:
    """(new, cached) of a session's first pass of a block after ``context``: the KV kept
    to its common prefix with it, at least one token forwarded (as
    :meth:`BatchedDraftModel.draft` does)."""
    keep = min(common_prefix_length(cached, context), len(context) - 1)
    return len(context) - keep, keep


def _sample(
    kind: str, cell: Cell, gamma: int, rows: Sequence[tuple[int, int]], time_s: float
) -> DraftSample:
    entries = [entry for new, old in rows for entry in pass_shapes(new, old, gamma)]
    batch_size, context_tokens = cell
    shape = BatchShape.of(entries)
    return DraftSample(kind, context_tokens, gamma, shape, gamma, time_s, batch_size, True)


def measure_cell(
    model: BatchedDraftModel,
    source: PromptSource,
    cell: Cell,
    gamma: int,
    runs: int,
    warmup_runs: int,
    clock: Callable[[], float] = perf_counter,
) -> list[DraftSample]:
    """The cold and follow-up calls of ``runs`` timed rounds at ``cell`` (warm-ups
    discarded), each round over fresh sessions and fresh random contexts."""
    batch_size, length = cell
    gammas = [gamma] * batch_size
    samples = []
    for run in range(warmup_runs + runs):
        states = [DraftState() for _ in range(batch_size)]
        contexts = [source.take(length) for _ in range(batch_size)]
        start = clock()
        model.draft(states, contexts, gammas)
        cold_s = clock() - start
        grown = [(*context, *source.tokens(1)) for context in contexts]
        follow_rows = [follow_up_row(s.cached, g) for s, g in zip(states, grown, strict=True)]
        start = clock()
        model.draft(states, grown, gammas)
        follow_s = clock() - start
        if run >= warmup_runs:
            samples.append(_sample("cold", cell, gamma, [(length, 0)] * batch_size, cold_s))
            samples.append(_sample("follow_up", cell, gamma, follow_rows, follow_s))
    return samples


def measure_batched(
    draft_model: Any,
    vocab_size: int,
    cells: Sequence[Cell],
    gamma: int,
    runs: int,
    warmup_runs: int,
    seed: int,
    done: Mapping[Cell, Sequence[DraftSample]] | None = None,
    on_cell: Callable[[Cell, list[DraftSample]], None] | None = None,
) -> list[DraftSample]:
    """Every cell's samples, in ``cells``' order: those in ``done`` as they are, the
    others measured on a :class:`BatchedDraftModel` of ``draft_model`` (the loaded HF
    draft) and handed to ``on_cell`` as each finishes. Each cell's contexts come from its
    own random stream (``seed``, b, context), so a resumed run draws what it would have."""
    if gamma < 1 or runs < 1:
        raise ValueError(f"need gamma >= 1 and runs >= 1, got {gamma}, {runs}")
    done = done or {}
    model = None if all(cell in done for cell in cells) else BatchedDraftModel(draft_model)
    samples: list[DraftSample] = []
    for cell in cells:
        if cell in done:
            samples.extend(done[cell])
            continue
        assert model is not None  # built above: some cell is not done
        source = PromptSource(vocab_size, (seed, *cell))
        found = measure_cell(model, source, cell, gamma, runs, warmup_runs)
        if on_cell is not None:
            on_cell(cell, found)
        samples.extend(found)
    return samples


def batch_cells(batch_sizes: Sequence[int], context_lengths: Sequence[int]) -> list[Cell]:
    """Each (b, context), b outermost."""
    return [(b, length) for b in batch_sizes for length in context_lengths]
