"""A simulated server's per-session KV cache: resident tokens per session in LRU order,
evicted while their total exceeds a token budget.

:class:`KvStore` is :class:`edgespec.sim.model.entities.ServerState`'s base: a
``__slots__`` class, as the simulator's entities are (the event loop reads its fields
directly, millions of times per run).
"""

from __future__ import annotations


class KvStore:
    """Session index -> resident KV tokens, in LRU order (a dict keeps insertion order),
    within ``kv_budget`` tokens; ``prefix_cache`` False (SLED): nothing kept between
    verifications."""

    __slots__ = ("in_parts", "kv", "kv_budget", "kv_total", "prefix_cache", "running")

    def __init__(self, kv_budget: int, prefix_cache: bool) -> None:
        self.kv_budget = kv_budget
        self.prefix_cache = prefix_cache
        self.kv: dict[int, int] = {}
        self.kv_total = 0
        # the sessions between the parts of one verification (a prefill in parts)
        self.in_parts: set[int] = set()
        # the sessions of the batch whose passes are being stored (evicted last among those
        # between parts: server/prefill_parts.eviction_order)
        self.running: frozenset[int] = frozenset()

    def cached_tokens(self, session_index: int) -> int:
        """KV tokens resident for a session (0: never verified here, or evicted)."""
        return self.kv.get(session_index, 0)

    def store(self, session_index: int, num_tokens: int) -> None:
        """Record a session's KV after a pass (most recently used), evicting LRU sessions
        while the resident total exceeds the budget. Without a prefix cache nothing is kept
        (a prefill in parts' KV ends with its last pass)."""
        if not self.prefix_cache:
            self.release(session_index)
            return
        self.in_parts.discard(session_index)
        self._keep(session_index, num_tokens)

    def store_part(self, session_index: int, num_tokens: int) -> None:
        """Record a session's KV after a part of its prefill: kept until its last pass (with
        or without a prefix cache), evicted after every session between verifications (the
        real server's order, :func:`edgespec.runtime.server.prefill_parts.eviction_order`)."""
        self.in_parts.add(session_index)
        self._keep(session_index, num_tokens)

    def _keep(self, session_index: int, num_tokens: int) -> None:
        kv, in_parts = self.kv, self.in_parts
        self.kv_total += num_tokens - kv.pop(session_index, 0)
        kv[session_index] = num_tokens  # re-inserted: now the most recently used
        while self.kv_total > self.kv_budget and kv:
            victim = next(iter(kv))  # the least recently used ...
            if in_parts:  # ... between verifications, else between parts: the batch's last,
                running = self.running  # then the fewest tokens
                victim = next((i for i in kv if i not in in_parts), -1)
                if victim < 0:
                    victim = min(kv, key=lambda i: (i in running, kv[i]))
            self.kv_total -= kv.pop(victim)
            in_parts.discard(victim)

    def release(self, session_index: int) -> None:
        """Free a finished session's KV."""
        self.kv_total -= self.kv.pop(session_index, 0)
        self.in_parts.discard(session_index)
