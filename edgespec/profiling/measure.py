"""Verification-latency profiling through the real runtime engine (WISP seed 000, App. C).

:func:`design_grid` lays out the configurations: compute-bound cold starts (total new
tokens split single / 2 / 4 / unevenly, nothing cached), memory-bound follow-ups
(L_new ∈ {1, 5, 10, 20, 50, 100} × L_total ∈ {500, 1000, 1500, 2000}, batch sizes 1 and 4),
random compute-bound and memory-bound configurations, and mixed batches of cached and
uncached requests, batch sizes 1–16. Training configurations and held-out configurations
come from different random streams (App. C: "generated with different random seeds").

:func:`measure_grid` runs each configuration ``warmup_runs`` times (discarded) and then
``runs`` times through :meth:`VerificationEngine.verify_batch`, the server's own code path.
Every run opens fresh sessions whose prompts are fresh random token ids, checked unique
across the whole profile (App. C raises on a duplicate, and so does this), so no KV state is
reused by accident. A follow-up entry's cache is built by an untimed setup verification; the
timed pass's actual (L_new, L_cached) come from :meth:`VerificationEngine.pending_sizes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter, process_time

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.policies.estimator import BatchShape
from edgespec.runtime.backends.base import TargetBackend
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.engine import VerificationEngine

Entry = tuple[int, int]
"""(L_new, L_cached) of one request in a batch."""


CLOCKS = ("wall", "cpu")


@dataclass(frozen=True, slots=True)
class GridSpec:
    """Sizes of the profiling grid; the defaults are WISP App. C's."""

    cold_totals: tuple[int, ...] = (1200, 1400, 1600, 1800, 2000)
    new_tokens: tuple[int, ...] = (1, 5, 10, 20, 50, 100)
    totals: tuple[int, ...] = (500, 1000, 1500, 2000)
    memory_batch_sizes: tuple[int, ...] = (1, 4)
    max_batch_size: int = 16
    num_random: int = 15
    num_mixed: int = 20
    num_test: int = 50
    warmup_runs: int = 10
    runs: int = 3
    seed: int = 0
    clock: str = "wall"
    """What a timed pass measures: ``wall`` (its latency, perf_counter) or ``cpu`` (this
    process's CPU time over it, process_time: with one torch thread, the latency the pass
    would have alone, robust to other jobs sharing the cores)."""

    def validate(self) -> None:
        if self.runs < 1 or self.warmup_runs < 0:
            raise ValueError(f"need runs >= 1 and warmup_runs >= 0, got {self}")
        if self.clock not in CLOCKS:
            raise ValueError(f"clock must be one of {CLOCKS}, got {self.clock!r}")
        if min(self.totals) <= max(self.new_tokens):
            raise ValueError("every L_total must exceed every L_new (something must be cached)")
        if min((*self.cold_totals, *self.new_tokens)) < 1 or self.max_batch_size < 1:
            raise ValueError("token counts and max_batch_size must be >= 1")


QUICK_GRID = GridSpec(
    cold_totals=(32, 64),
    new_tokens=(1, 5, 12),
    totals=(48, 96),
    memory_batch_sizes=(1, 3),
    max_batch_size=6,
    num_random=3,
    num_mixed=4,
    num_test=6,
    warmup_runs=1,
    runs=2,
)


@dataclass(frozen=True, slots=True)
class GridConfig:
    """One batch configuration: its category, split ('train' or 'test') and entries."""

    category: str
    split: str
    entries: tuple[Entry, ...]


def _split_even(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _random_configs(
    spec: GridSpec, rng: np.random.Generator, n: int, split: str
) -> list[GridConfig]:
    """n random configurations cycling over the compute, memory and mixed categories."""
    top_cold, top_total = max(spec.cold_totals), max(spec.totals)
    small_new = [x for x in spec.new_tokens if x <= max(1, top_total // 10)] or [1]
    out = []
    for i in range(n):
        kind = ("compute_random", "memory_random", "mixed")[i % 3]
        size = int(rng.integers(1, spec.max_batch_size + 1))
        entries: list[Entry] = []
        for _ in range(size):
            cold = kind == "compute_random" or (kind == "mixed" and rng.random() < 0.5)
            if cold:
                total = int(rng.integers(max(1, top_cold * 6 // 10), top_cold + 1))
                entries.append((max(1, total // size), 0))
            else:
                new = int(rng.integers(1, max(small_new) + 1))
                cached = int(rng.integers(top_total // 4, top_total - new + 1))
                entries.append((new, cached))
        if kind == "mixed" and all(c == 0 for _, c in entries) and size > 1:
            entries[-1] = (1, top_total // 2)
        out.append(GridConfig(kind, split, tuple(entries)))
    return out


def design_grid(spec: GridSpec) -> list[GridConfig]:
    """The training configurations (deterministic, then random) and the held-out ones."""
    spec.validate()
    grid: list[GridConfig] = []
    for total in spec.cold_totals:
        for parts in (1, 2, 4):
            entries = tuple((n, 0) for n in _split_even(total, parts) if n > 0)
            grid.append(GridConfig("compute", "train", entries))
        uneven = (total // 2, total // 3, total - total // 2 - total // 3)
        grid.append(GridConfig("compute", "train", tuple((n, 0) for n in uneven if n > 0)))
    for new in spec.new_tokens:
        for total in spec.totals:
            for size in spec.memory_batch_sizes:
                grid.append(GridConfig("memory", "train", ((new, total - new),) * size))
    seeds = np.random.SeedSequence(spec.seed).spawn(2)
    train_rng, test_rng = (np.random.default_rng(s) for s in seeds)
    grid += _random_configs(spec, train_rng, spec.num_random * 2 + spec.num_mixed, "train")
    grid += _random_configs(spec, test_rng, spec.num_test, "test")
    return grid


@dataclass(frozen=True, slots=True)
class Sample:
    """One timed verification batch: its configuration index, run, measured shape
    (per-request (L_new, L_cached) as the engine saw them) and wall time."""

    config_index: int
    run: int
    entries: tuple[Entry, ...]
    time_s: float

    @property
    def shape(self) -> BatchShape:
        return BatchShape.of(self.entries)


class PromptSource:
    """Fresh random prompts that are never repeated within one profile."""

    def __init__(
        self,
        vocab_size: int,
        seed: int | Sequence[int],
        avoid: frozenset[int] = frozenset(),
        max_draws: int = 100,
    ) -> None:
        self._rng = np.random.default_rng(seed)
        self._vocab = vocab_size
        self._avoid = avoid
        self._seen: set[tuple[int, ...]] = set()
        self._max_draws = max_draws

    def tokens(self, length: int) -> tuple[int, ...]:
        """Random ids (draft tokens: not checked for uniqueness)."""
        ids = self._rng.integers(0, self._vocab, length)
        for bad in self._avoid:  # e.g. EOS: would end a session before its timed pass
            ids[ids == bad] = (bad + 1) % self._vocab
        return tuple(int(t) for t in ids)

    def take(self, length: int) -> tuple[int, ...]:
        """A prompt never handed out before (raises on a duplicate, as App. C does)."""
        for _ in range(self._max_draws):  # redraw a collision (only likely for tiny prompts)
            prompt = self.tokens(length)
            if prompt not in self._seen:
                break
        else:
            raise RuntimeError(f"duplicate profiling prompt of {length} tokens")
        self._seen.add(prompt)
        return prompt

    @property
    def num_prompts(self) -> int:
        return len(self._seen)


def cold_draft_tokens(new: int) -> int:
    """How many of a cold entry's ``new`` tokens are drafted (the rest is its prompt)."""
    return min(4, new // 2)


def logit_rows(entry: Entry) -> int:
    """Positions of ``entry`` whose vocabulary logits the timed pass computes (the engine's
    ``num_logits``: drafted + 1). A cold entry drafts :func:`cold_draft_tokens`; a follow-up
    forwards the one token its setup pass committed and drafts the rest of its L_new, so
    all L_new positions."""
    new, cached = entry
    return new if cached > 0 else cold_draft_tokens(new) + 1


def _prepare(
    engine: VerificationEngine, prompts: PromptSource, entries: Sequence[Entry], tag: str
) -> list[VerifyCall] | None:
    """Open one session per entry and build its KV cache (untimed); return the timed calls,
    or ``None`` (sessions closed) when a setup pass ended a session with EOS."""
    setups, plans = [], []
    for j, (new, cached) in enumerate(entries):
        sid = f"{tag}-{j}"
        if cached > 0:  # prompt of `cached` tokens + 1 drafted: the cache then covers ~cached
            prompt, draft = prompts.take(cached), 1
        else:
            draft = cold_draft_tokens(new)
            prompt = prompts.take(new - draft)
        sampling = SamplingParams(max_new_tokens=new + 3)
        engine.open_session(SessionSpec(sid, "profile", prompt, sampling))
        if cached > 0:
            setups.append(VerifyCall(sid, len(prompt), prompts.tokens(1)))
        plans.append((sid, new, draft if cached == 0 else None))
    if setups:
        for call in setups:
            engine.validate(call, max_draft_tokens=1)
        engine.verify_batch(setups)
    if any(engine.session_finished(sid) for sid, _, _ in plans):  # the target emitted EOS
        for sid, _, _ in plans:
            engine.close_session(sid)
        return None
    calls = []
    for sid, new, cold_draft in plans:
        tokens = engine.session_tokens(sid)
        draft = cold_draft if cold_draft is not None else new - engine.pending_sizes(sid, 0)[0]
        draft = max(draft, 0)
        call = VerifyCall(sid, len(tokens), prompts.tokens(draft))
        engine.validate(call, max_draft_tokens=max(draft, 1))
        calls.append(call)
    return calls


def measure_batch(
    engine: VerificationEngine,
    prompts: PromptSource,
    entries: Sequence[Entry],
    tag: str,
    clock: str = "wall",
) -> tuple[tuple[Entry, ...], float]:
    """Time one verification batch of ``entries`` through the engine on ``clock`` (see
    :attr:`GridSpec.clock`); sessions are closed. A setup that ends in EOS is retried with
    new prompts (3 attempts)."""
    for attempt in range(3):
        calls = _prepare(engine, prompts, entries, f"{tag}a{attempt}")
        if calls is not None:
            break
    else:
        raise RuntimeError(f"profiling batch {tag}: the target kept emitting EOS in setup")
    actual = tuple(engine.pending_sizes(c.session_id, len(c.draft_token_ids)) for c in calls)
    timer = process_time if clock == "cpu" else perf_counter
    start = timer()
    results = engine.verify_batch(calls)
    elapsed = timer() - start
    for c in calls:
        engine.close_session(c.session_id)
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise RuntimeError(f"profiling batch {tag} failed: {failed[0]}")
    return actual, elapsed


def measure_grid(
    backend: TargetBackend,
    grid: Sequence[GridConfig],
    spec: GridSpec,
    on_config: Callable[[int], None] | None = None,
    done: Mapping[int, Sequence[Sample]] | None = None,
    on_measured: Callable[[int, list[Sample], int], None] | None = None,
) -> tuple[list[Sample], int]:
    """Measure every configuration not in ``done`` (samples of an interrupted profile,
    kept as they are); returns all samples in grid order and the number of unique prompts
    this call used. Warm-up runs are executed and discarded. ``on_measured(index, samples,
    num_prompts)`` follows each newly measured configuration (the checkpoint's hook),
    ``on_config(index)`` too (progress).

    A resumed call draws its prompts from another random stream (seeded by the number of
    configurations already done): its engine is new, so nothing measured before can be in
    its cache, and its prompts are unique among themselves like every call's."""
    done = done or {}
    engine = VerificationEngine(
        backend, kv_budget_tokens=1 << 30, max_sessions=4 * spec.max_batch_size + 64
    )
    seed = [spec.seed + 1, len(done)] if done else spec.seed + 1
    prompts = PromptSource(backend.vocab_size, seed, backend.eos_token_ids)
    samples: list[Sample] = []
    for index, config in enumerate(grid):
        if index in done:
            samples.extend(done[index])
            continue
        before, measured = prompts.num_prompts, []
        for run in range(spec.warmup_runs + spec.runs):
            tag = f"c{index}r{run}"
            actual, elapsed = measure_batch(engine, prompts, config.entries, tag, spec.clock)
            if run >= spec.warmup_runs:
                measured.append(Sample(index, run - spec.warmup_runs, actual, elapsed))
        samples.extend(measured)
        if on_measured is not None:
            on_measured(index, measured, prompts.num_prompts - before)
        if on_config is not None:
            on_config(index)
    return samples, prompts.num_prompts
