"""The verification engine's counts: :class:`EngineTally`, kept as it verifies (under the
engine's lock), and :class:`EngineCounters`, the totals with its cache's size as
:meth:`~edgespec.runtime.server.engine_sessions.SessionTable.counters` reports them (the
service's stats, metrics and Prometheus figures read them: :mod:`.counters`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.messages import VerifyOutcome
from edgespec.runtime.server.session_record import EngineSession


@dataclass(frozen=True, slots=True)
class EngineCounters:
    """The engine's totals and its cache's size now. ``num_prefill_parts``: passes that
    forwarded a part of a long uncached context (:mod:`.prefill_parts`).
    ``semantic_sessions``: (threshold, lossy sessions that committed a round under it),
    ``accepted_mismatches``: (threshold, mismatching draft tokens those sessions committed),
    sorted, thresholds seen only."""

    num_forward_passes: int
    num_tokens_forwarded: int
    num_verifications: int
    num_cache_hits: int
    num_cache_misses: int
    num_reprefills: int
    num_evictions: int
    num_cached_tokens: int
    num_cached_bytes: int
    num_sessions: int
    num_prefill_parts: int = 0
    semantic_sessions: tuple[tuple[int, int], ...] = ()
    accepted_mismatches: tuple[tuple[int, int], ...] = ()

    @property
    def cache_hit_ratio(self) -> float:
        total = self.num_cache_hits + self.num_cache_misses
        return self.num_cache_hits / total if total else 0.0


@dataclass(slots=True)
class EngineTally:
    """The engine's running counts (under its lock);
    :meth:`~edgespec.runtime.server.engine_sessions.SessionTable.counters` reports them with
    the cache's current size as :class:`EngineCounters`."""

    num_forward_passes: int = 0
    num_tokens_forwarded: int = 0
    num_verifications: int = 0
    num_cache_hits: int = 0
    num_cache_misses: int = 0
    num_reprefills: int = 0
    num_evictions: int = 0
    num_prefill_parts: int = 0
    semantic_sessions: Counter[int] = field(default_factory=Counter)
    accepted_mismatches: Counter[int] = field(default_factory=Counter)

    def count_pass(self, items: Sequence[ForwardItem], num_parts: int) -> None:
        """Count a forward pass of ``items`` (none: no pass), ``num_parts`` of them prefill
        parts, the others verifications."""
        self.num_forward_passes += bool(items)
        self.num_tokens_forwarded += sum(len(item.new_token_ids) for item in items)
        self.num_verifications += len(items) - num_parts
        self.num_prefill_parts += num_parts

    def count_round(self, s: EngineSession, outcome: VerifyOutcome) -> None:
        """Count a round committed for ``s`` (before it is stored): a lossy session's
        first round counts the session under its threshold, every round its committed
        mismatching draft tokens."""
        semantic = s.spec.semantic
        if s.rule.lossless or semantic is None:
            return
        self.semantic_sessions[semantic.threshold] += int(s.last_round is None)
        self.accepted_mismatches[semantic.threshold] += outcome.accepted_mismatches

    def scalars(self) -> dict[str, int]:
        """The plain counts, by field name."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if isinstance(getattr(self, f.name), int)
        }
