"""The Prometheus endpoint serves the same numbers as the ``Stats`` RPC (docs/RUNTIME.md,
"Observability"): every :class:`ServerStats` field as ``edgespec_<field>``."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.runtime.messages import ServerStats


def test_every_stats_field_is_a_metric() -> None:
    pytest.importorskip("prometheus_client")
    from edgespec.runtime.server.prometheus import _Collector

    stats = ServerStats(
        queue_depth=3,
        num_sessions=4,
        num_batches=5,
        mean_batch_size=1.5,
        max_batch_size=7,
        batch_size_histogram=((1, 2), (7, 1)),
        num_tokens_forwarded=11,
        num_cache_hits=12,
        num_cache_misses=13,
        cache_hit_ratio=0.25,
        num_evictions=14,
        num_reprefills=15,
        num_cached_tokens=16,
        num_cached_bytes=17,
        num_expired_sessions=18,
        num_rejected=19,
        busy=True,
    )
    samples = [s for family in _Collector(lambda: stats).collect() for s in family.samples]
    values = {s.name: s.value for s in samples if not s.labels}
    for f in dataclasses.fields(ServerStats):
        if f.name == "batch_size_histogram":
            continue
        want = float(getattr(stats, f.name))
        assert values.get(f"edgespec_{f.name}", values.get(f"edgespec_{f.name}_total")) == want, (
            f.name
        )
    by_size = {
        s.labels["batch_size"]: s.value for s in samples if s.name == "edgespec_batches_by_size"
    }
    assert by_size == {"1": 2.0, "7": 1.0}
