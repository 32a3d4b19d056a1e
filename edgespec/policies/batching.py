"""Batching policies: which queued verifications share the next target forward pass."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from edgespec.core.frozen import frozen_builder
from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies.interfaces import BatchLimits
from edgespec.policies.params import PolicyParamError


def _take_within_limits(
    candidates: Iterable[PendingVerification], limits: BatchLimits
) -> tuple[int, ...]:
    """Greedily take candidates in order while the batch stays within ``limits``: one that
    would break the token or context limit is skipped and a later, smaller one may join
    (first fit); the batch size limit ends the batch.

    The first candidate is always taken, even if it alone exceeds a token limit:
    otherwise an oversized request would block the queue forever.
    """
    chosen: list[int] = []
    max_size = limits.max_batch_size
    max_tokens = limits.max_batch_tokens
    max_context = limits.max_context_tokens
    num_tokens = num_context = 0
    for entry in candidates:
        if len(chosen) >= max_size:
            break
        new = entry.num_new_tokens
        context = entry.num_cached_tokens + new  # entry.num_context_tokens
        if chosen and (num_tokens + new > max_tokens or num_context + context > max_context):
            continue
        chosen.append(entry.entry_id)
        num_tokens += new
        num_context += context
    return tuple(chosen)


_ARRIVAL_ORDER = attrgetter("enqueued_s", "entry_id")
_plan = frozen_builder(BatchPlan)  # BatchPlan(entry_ids, reason), built once per decision


@dataclass(frozen=True, slots=True)
class FcfsBatching:
    """First come, first served (SLED-style FIFO): the oldest entries, in arrival order; one
    that would break the token or context limit waits, and a later entry that fits joins
    (first fit, :func:`_take_within_limits`: no head-of-line blocking)."""

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        return _plan(_take_within_limits(sorted(queue, key=_ARRIVAL_ORDER), limits), "fcfs")


def _clients_in_turn(entries: list[PendingVerification]) -> list[PendingVerification]:
    """``entries`` (in arrival order) with every client's k-th before any client's
    (k + 1)-th, arrival order within each turn."""
    seen: dict[str, int] = {}
    turns = []
    for e in entries:
        turn = seen.get(e.client_id, 0)
        seen[e.client_id] = turn + 1
        turns.append(turn)
    order = sorted(range(len(entries)), key=turns.__getitem__)  # stable: arrival within a turn
    return [entries[i] for i in order]


@dataclass(frozen=True, slots=True)
class DecodesFirstBatching:
    """FCFS with decoding rounds ahead of prefills (an edgespec mode beside the papers'
    FCFS, the order of Sarathi-Serve's and vLLM's chunked prefill): the oldest entry, then
    every decoding round in arrival order, then the prefills, while the batch stays within
    its limits. The prefills go in arrival order, one client at a time in turn when
    ``prefills_in_turn`` (each client's oldest, then each one's second, ...), so one
    client's many long prompts do not hold another client's first token for all of theirs.

    A *decoding round* forwards at most ``max_decode_uncached_tokens`` context tokens
    beyond its draft (a session's next round forwards the one token its last verdict
    committed); a prompt's first round, a prefill part or a re-prefill after an eviction
    forwards more. Under FCFS the prefill parts of several long prompts keep their
    arrival, so when they fill a batch's token budget (8 parts of 512 fill 4,096) every
    session already decoding waits until they are done; here each batch carries the
    decoding rounds, and the oldest entry still goes first, so a prefill is never passed
    over for good.

    ``max_prefill_tokens`` (``None``: no budget but the batch's): the most tokens the
    prefills after the oldest entry may forward in one batch, counting the oldest entry's
    own when it is a prefill (vLLM's chunked-prefill budget): the prefills that do not fit
    wait, so a pass carrying the decoding rounds stays short, at the cost of the prompts'
    first tokens.
    """

    max_decode_uncached_tokens: int = 16
    prefills_in_turn: bool = True
    max_prefill_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_decode_uncached_tokens < 0:
            raise PolicyParamError(
                "max_decode_uncached_tokens",
                f"max_decode_uncached_tokens must be >= 0, got {self.max_decode_uncached_tokens}",
            )
        if self.max_prefill_tokens is not None and self.max_prefill_tokens < 1:
            raise PolicyParamError(
                "max_prefill_tokens",
                f"max_prefill_tokens must be >= 1 (or null: no budget), got "
                f"{self.max_prefill_tokens}",
            )

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        if not queue:
            return BatchPlan((), reason="decodes-first:empty")
        ordered = sorted(queue, key=_ARRIVAL_ORDER)
        head, bound = ordered[0], self.max_decode_uncached_tokens
        decodes = [e for e in ordered[1:] if e.num_new_tokens - e.num_draft_tokens <= bound]
        prefills = [e for e in ordered if e.num_new_tokens - e.num_draft_tokens > bound]
        if self.prefills_in_turn:  # the head, when a prefill, is its client's first turn
            prefills = _clients_in_turn(prefills)
        rest = [e for e in prefills if e is not head]
        if self.max_prefill_tokens is not None:
            spent = head.num_new_tokens if len(rest) < len(prefills) else 0
            rest = _within_budget(rest, self.max_prefill_tokens - spent)
        order = [head, *decodes, *rest]
        return BatchPlan(_take_within_limits(order, limits), reason="decodes-first")


def _within_budget(
    entries: list[PendingVerification], budget_tokens: int
) -> list[PendingVerification]:
    """The entries, in order, whose new tokens fit what is left of ``budget_tokens`` (one
    that does not fit is skipped, a smaller one after it may still go)."""
    kept = []
    for entry in entries:
        if entry.num_new_tokens <= budget_tokens:
            kept.append(entry)
            budget_tokens -= entry.num_new_tokens
    return kept


@dataclass(frozen=True, slots=True)
class LengthAwareBatching:
    """LAB (DSD §4): the head-of-line entry plus the entries whose context length is
    closest to it, so padding in the batched forward pass stays small.

    ``max_length_ratio`` bounds how much longer or shorter (as a ratio of context
    lengths) a companion may be; ``None`` means no bound.
    """

    max_length_ratio: float | None = None

    def __post_init__(self) -> None:
        ratio = self.max_length_ratio
        if ratio is not None and not (math.isfinite(ratio) and ratio >= 1.0):
            raise PolicyParamError(
                "max_length_ratio",
                f"max_length_ratio must be a finite number >= 1 (or null: no bound), got {ratio}",
            )

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        if not queue:
            return BatchPlan((), reason="lab:empty")
        head = min(queue, key=_ARRIVAL_ORDER)
        head_len = head.num_context_tokens
        others = [e for e in queue if e.entry_id != head.entry_id and self._close(e, head_len)]
        others.sort(key=lambda e: (abs(e.num_context_tokens - head_len), e.enqueued_s, e.entry_id))
        return BatchPlan(_take_within_limits([head, *others], limits), reason="lab")

    def _close(self, entry: PendingVerification, head_len: int) -> bool:
        if self.max_length_ratio is None:
            return True
        lo, hi = sorted((max(entry.num_context_tokens, 1), max(head_len, 1)))
        return hi / lo <= self.max_length_ratio
