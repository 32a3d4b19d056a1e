"""Optional Prometheus endpoint exposing the server stats (needs ``prometheus_client``):
every :class:`ServerStats` field as ``edgespec_<field>``, the batch-size histogram as
``edgespec_batches_by_size``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from edgespec.runtime.messages import ServerStats

_GAUGES = {
    "queue_depth": "verification requests waiting",
    "num_sessions": "open sessions",
    "mean_batch_size": "mean verification batch size",
    "max_batch_size": "largest verification batch so far",
    "cache_hit_ratio": "verifications whose session prefix was cached",
    "num_cached_tokens": "tokens held in the KV prefix cache",
    "num_cached_bytes": "bytes held in the KV prefix cache",
    "busy": "1 while a verification pass is running",
}
_COUNTERS = {
    "num_batches": "verification forward passes",
    "num_tokens_forwarded": "tokens forwarded through the target",
    "num_cache_hits": "verifications on a cached prefix",
    "num_cache_misses": "verifications that prefilled (first round or after eviction)",
    "num_evictions": "sessions evicted from the KV cache (LRU)",
    "num_reprefills": "evicted sessions re-prefilled",
    "num_expired_sessions": "idle sessions closed after the timeout",
    "num_rejected": "requests refused (invalid, not found, over a limit)",
}


class _Collector:
    def __init__(self, stats: Callable[[], ServerStats]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        s = self._stats()
        for name, doc in _GAUGES.items():
            yield GaugeMetricFamily(f"edgespec_{name}", doc, value=float(getattr(s, name)))
        for name, doc in _COUNTERS.items():
            yield CounterMetricFamily(f"edgespec_{name}", doc, value=float(getattr(s, name)))
        hist = GaugeMetricFamily(
            "edgespec_batches_by_size", "batches run per batch size", labels=["batch_size"]
        )
        for size, count in s.batch_size_histogram:
            hist.add_metric([str(size)], float(count))
        yield hist


def start_prometheus(port: int, stats: Callable[[], ServerStats], host: str = "127.0.0.1") -> Any:
    """Serve ``/metrics`` on ``host:port`` from ``stats()``; returns the HTTP server."""
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError as exc:
        raise ImportError(
            "--prometheus-port needs the optional package prometheus-client "
            "(pip install prometheus-client)"
        ) from exc
    registry = CollectorRegistry()
    registry.register(_Collector(stats))  # type: ignore[arg-type]
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server
