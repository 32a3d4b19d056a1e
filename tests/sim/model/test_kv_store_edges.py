"""The server's per-session KV store (kv_store.KvStore, ServerState's base) at its edges:
a resident total exactly at the budget stays, eviction goes least recently used first,
a re-stored session becomes the most recently used, and a SLED server keeps nothing.
Both simulator paths share this code, so no path comparison sees it."""

from __future__ import annotations

from edgespec.hardware.cost_models import WispCost
from edgespec.policies.estimator import WispCoefficients
from edgespec.sim.model.entities import ServerState


def _server(kv_budget: int, prefix_cache: bool = True) -> ServerState:
    cost = WispCost(WispCoefficients(0.001, 0.0, 0.0, 0.005))
    return ServerState(0, cost, None, kv_budget, 4, 100, prefix_cache)


def test_a_total_exactly_at_the_budget_is_kept() -> None:
    server = _server(10)
    server.store(0, 6)
    server.store(1, 4)
    assert (server.kv, server.kv_total) == ({0: 6, 1: 4}, 10)
    assert (server.cached_tokens(0), server.cached_tokens(1), server.cached_tokens(2)) == (6, 4, 0)


def test_eviction_is_least_recently_used_and_a_restore_refreshes() -> None:
    server = _server(10)
    server.store(0, 3)
    server.store(1, 3)
    server.store(2, 3)
    server.store(0, 4)  # session 0 grows and becomes the most recently used: 1 is the LRU
    assert list(server.kv.items()) == [(1, 3), (2, 3), (0, 4)]
    assert server.kv_total == 10
    server.store(3, 2)  # 12 > 10: evict 1 (→ 9)
    assert list(server.kv.items()) == [(2, 3), (0, 4), (3, 2)]
    assert server.kv_total == 9
    server.store(2, 8)  # 2 re-stored as MRU: 4 + 2 + 8 = 14, evict 0 (→ 10, at the budget)
    assert list(server.kv.items()) == [(3, 2), (2, 8)]
    assert server.kv_total == 10


def test_a_session_larger_than_the_budget_evicts_everything_including_itself() -> None:
    server = _server(10)
    server.store(0, 7)
    server.store(1, 12)
    assert (server.kv, server.kv_total) == ({}, 0)


def test_release_frees_exactly_the_sessions_tokens() -> None:
    server = _server(100)
    server.store(0, 30)
    server.store(1, 20)
    server.release(0)
    assert (server.kv, server.kv_total) == ({1: 20}, 20)
    server.release(0)  # already gone (or evicted): nothing changes
    server.release(7)
    assert (server.kv, server.kv_total) == ({1: 20}, 20)
    server.store(2, 80)  # 100: fits exactly now that 0's 30 tokens are free
    assert (server.kv, server.kv_total) == ({1: 20, 2: 80}, 100)


def test_without_a_prefix_cache_nothing_is_kept() -> None:
    server = _server(100, prefix_cache=False)
    server.store(0, 30)
    assert (server.kv, server.kv_total, server.cached_tokens(0)) == ({}, 0, 0)


def test_sessions_between_prefill_parts_are_evicted_last_fewest_tokens_first() -> None:
    server = _server(20)
    server.store_part(0, 8)
    server.store(1, 3)
    server.store_part(2, 5)
    server.store(3, 4)  # 20: at the budget
    server.store(4, 6)  # 26: the sessions between verifications go first, LRU: 1, then 3
    assert (server.kv, server.in_parts) == ({0: 8, 2: 5, 4: 6}, {0, 2})
    server.release(4)
    server.store_part(2, 9)  # 17
    server.store_part(5, 4)  # 21: only sessions in parts; the fewest tokens go, 5 itself
    assert (server.kv, server.in_parts, server.kv_total) == ({0: 8, 2: 9}, {0, 2}, 17)
    server.store(2, 12)  # its last pass: no longer in parts, 20 at the budget
    assert (server.in_parts, server.kv_total) == ({0}, 20)


def test_between_parts_the_sessions_the_batch_left_out_go_first() -> None:
    """As the real server (server/prefill_parts.eviction_order): a session far on but not
    in the batch kept every batch's parts out of the budget, and none advanced."""
    server = _server(60)
    server.store_part(0, 48)  # waiting, most of its context cached
    server.running = frozenset({1})  # the batch being stored: session 1's part
    server.store_part(1, 15)  # 63: session 0 goes, though it has more tokens
    assert (server.kv, server.in_parts) == ({1: 15}, {1})
    server.running = frozenset()
    server.store_part(0, 48)  # 63 again, none running: the fewest tokens go, as before
    assert server.kv == {0: 48}


def test_without_a_prefix_cache_a_parts_kv_lasts_until_its_last_pass() -> None:
    server = _server(100, prefix_cache=False)
    server.store_part(0, 30)
    assert (server.kv, server.in_parts) == ({0: 30}, {0})
    server.store(0, 45)
    assert (server.kv, server.kv_total, server.in_parts) == ({}, 0, set())
