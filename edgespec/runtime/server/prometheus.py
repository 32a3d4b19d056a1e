"""Optional Prometheus endpoint (needs ``prometheus_client``): the service's
:class:`~edgespec.runtime.server.counters.ServiceMetrics` under Prometheus' naming rules —
counters end in ``_total``, units are spelled out (``_seconds``, ``_bytes``, ``_tokens``),
latencies and batch sizes are histograms. docs/RUNTIME.md ("Observability") has the table;
:data:`GAUGES`, :data:`COUNTERS`, :data:`BY_THRESHOLD` and :data:`HISTOGRAMS` are its
source."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from edgespec.errors import MissingPackageError
from edgespec.policies.semantic.head import THRESHOLD_STEPS
from edgespec.runtime.server.counters import HistogramSnapshot, ServiceMetrics
from edgespec.runtime.server.metrics_http import BoundedWSGIServer, HttpBounds, serve_wsgi

PREFIX = "edgespec_"

GAUGES: dict[str, tuple[str, str]] = {  # metric -> (ServerStats field, help)
    "queue_depth": ("queue_depth", "verification requests waiting"),
    "open_sessions": ("num_sessions", "sessions open now"),
    "cached_tokens": ("num_cached_tokens", "tokens held in the KV prefix cache"),
    "cached_bytes": ("num_cached_bytes", "bytes held in the KV prefix cache"),
    "busy": ("busy", "1 while a verification pass is running"),
}
COUNTERS: dict[str, tuple[str, str]] = {  # metric without _total -> (field, help)
    "batches": ("stats.num_batches", "verification forward passes"),
    "forwarded_tokens": ("stats.num_tokens_forwarded", "tokens forwarded through the target"),
    "cache_hits": ("stats.num_cache_hits", "verifications on a cached prefix"),
    "cache_misses": ("stats.num_cache_misses", "verifications that prefilled"),
    "evictions": ("stats.num_evictions", "sessions evicted from the KV cache (LRU)"),
    "reprefills": ("stats.num_reprefills", "evicted sessions re-prefilled"),
    "prefill_parts": ("num_prefill_parts", "passes forwarding a part of a long uncached context"),
    "resent_verifications": ("num_resent", "verify calls repeating one the server had"),
    "expired_sessions": ("stats.num_expired_sessions", "idle sessions closed after the timeout"),
    "verifications": ("num_verifications", "rounds decided and answered"),
    "drafted_tokens": ("num_drafted_tokens", "draft tokens verified"),
    "accepted_tokens": ("num_accepted_tokens", "draft tokens accepted"),
    "committed_tokens": ("num_committed_tokens", "tokens committed (accepted + the target's)"),
    "opened_sessions": ("num_sessions_opened", "sessions opened"),
    "closed_sessions": ("num_sessions_closed", "sessions closed by their client"),
}
REJECTED = "rejected_requests"  # a counter labelled by the gRPC status code
BY_THRESHOLD: dict[str, tuple[str, str]] = {  # counters labelled by the semantic threshold
    "semantic_sessions": (
        "semantic_sessions",
        "lossy (semantic) sessions that committed a round, by threshold (of 16)",
    ),
    "accepted_mismatches": (
        "accepted_mismatches",
        "mismatching draft tokens committed by semantic verification, by threshold (of 16)",
    ),
}
"""Labelled ``threshold`` "0".."16": every one present (0 included), so at most 17 series
each, whatever the clients send."""
HISTOGRAMS: dict[str, tuple[str, str]] = {
    "batch_size": ("batch_size", "sessions per verification pass"),
    "batch_seconds": ("batch_seconds", "wall time of a verification pass"),
    "queue_wait_seconds": ("queue_wait_seconds", "time a verification waited in the queue"),
}


def _field(metrics: ServiceMetrics, path: str) -> float:
    value: Any = metrics
    for part in path.split("."):
        value = getattr(value, part)
    return float(value)


def _histogram(name: str, doc: str, h: HistogramSnapshot) -> Any:
    from prometheus_client.core import HistogramMetricFamily

    buckets = [(f"{b:g}", float(n)) for b, n in zip(h.bounds, h.cumulative, strict=True)]
    buckets.append(("+Inf", float(h.count)))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=h.sum)


def _by_threshold(name: str, doc: str, counts: tuple[tuple[int, int], ...]) -> Any:
    from prometheus_client.core import CounterMetricFamily

    family = CounterMetricFamily(name, doc, labels=["threshold"])
    seen = dict(counts)
    for threshold in range(THRESHOLD_STEPS + 1):
        family.add_metric([str(threshold)], float(seen.get(threshold, 0)))
    return family


class _Collector:
    def __init__(self, metrics: Callable[[], ServiceMetrics]) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        m = self._metrics()
        for name, (field, doc) in GAUGES.items():
            yield GaugeMetricFamily(PREFIX + name, doc, value=float(getattr(m.stats, field)))
        for name, (path, doc) in COUNTERS.items():
            yield CounterMetricFamily(PREFIX + name, doc, value=_field(m, path))
        rejected = CounterMetricFamily(
            PREFIX + REJECTED, "requests refused, by gRPC status code", labels=["code"]
        )
        for code, count in m.rejected_by_code:
            rejected.add_metric([code], float(count))
        yield rejected
        for name, (field, doc) in BY_THRESHOLD.items():
            yield _by_threshold(PREFIX + name, doc, getattr(m, field))
        for name, (field, doc) in HISTOGRAMS.items():
            yield _histogram(PREFIX + name, doc, getattr(m, field))


def start_prometheus(
    port: int,
    metrics: Callable[[], ServiceMetrics],
    host: str = "127.0.0.1",
    bounds: HttpBounds | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> BoundedWSGIServer:
    """Serve ``/metrics`` on ``host:port`` from ``metrics()`` (prometheus_client's app, so
    any GET path answers the same) within ``bounds`` (:mod:`.metrics_http`'s defaults when
    ``None``); returns the HTTP server."""
    try:
        from prometheus_client import CollectorRegistry, make_wsgi_app
    except ImportError as exc:
        raise MissingPackageError(
            "--prometheus-port needs the optional package prometheus-client "
            "(pip install prometheus-client)"
        ) from exc
    registry = CollectorRegistry()
    registry.register(_Collector(metrics))  # type: ignore[arg-type]
    return serve_wsgi(host, port, make_wsgi_app(registry), bounds or HttpBounds(), clock)
