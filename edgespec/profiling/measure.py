"""Verification-latency profiling through the real runtime engine (WISP seed 000, App. C):
the configurations :func:`~edgespec.profiling.grid.design_grid` lays out, timed.

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
from typing import Any

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.errors import UserInputError
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.grid import Entry, GridConfig, GridSpec, design_grid
from edgespec.runtime.backends.base import TargetBackend
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.engine import VerificationEngine


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
        else:  # a tiny vocabulary's short prompts run out: a one-line refusal, no traceback
            raise UserInputError(
                f"duplicate profiling prompt of {length} tokens: {self._max_draws} draws over "
                f"the target's {self._vocab}-token vocabulary gave no new one (a profile never "
                "repeats a prompt, WISP App. C); the grid needs more distinct prompts than "
                "this vocabulary has"
            )
        self._seen.add(prompt)
        return prompt

    @property
    def num_prompts(self) -> int:
        return len(self._seen)


def cold_draft_tokens(new: int) -> int:
    """How many of a cold entry's ``new`` tokens are drafted (the rest is its prompt)."""
    return min(4, new // 2)


def _output_budget(entry: Entry) -> int:
    """The ``max_new_tokens`` an entry's session opens with: what its passes commit at
    most (a cold entry's one pass: its draft + 1; a follow-up's setup pass and its
    ``new`` tokens), and 2 more."""
    new, cached = entry
    return (cold_draft_tokens(new) if cached == 0 else new) + 3


def context_needed(entry: Entry) -> int:
    """The target context an entry's session takes: its prompt and its output budget."""
    new, cached = entry
    prompt = cached if cached > 0 else new - cold_draft_tokens(new)
    return prompt + _output_budget(entry)


def check_grid_context(model: Any, spec: GridSpec, scale: float) -> None:
    """A :class:`UserInputError` when ``spec``'s grid, laid out at ``--scale`` ``scale``,
    has an entry past the target ``model``'s context (:func:`grid_context_problem`)."""
    context = model.config.get_text_config().max_position_embeddings
    if context and (problem := grid_context_problem(design_grid(spec), context, scale)):
        raise UserInputError(problem)


def grid_context_problem(grid: Sequence[GridConfig], context: int, scale: float) -> str | None:
    """Why a target of ``context`` tokens cannot be profiled over ``grid``, laid out at
    ``--scale`` ``scale`` (its largest entry's :func:`context_needed` over it), ``None``
    when it can: said once the target loads, before anything is measured (it failed
    mid-profile, and its checkpoint with it)."""
    needed = max(context_needed(entry) for config in grid for entry in config.entries)
    if needed <= context:
        return None
    return (f"the grid's largest entry needs {needed} tokens of context (prompt and output), "
            f"over the target's context of {context}: lower --scale (about "
            f"{scale * (context - 3) / needed:.2f} fits)")  # fmt: skip


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
        sampling = SamplingParams(max_new_tokens=_output_budget((new, cached)))
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
