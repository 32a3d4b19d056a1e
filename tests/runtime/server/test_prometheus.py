"""The Prometheus endpoint (docs/RUNTIME.md, "Observability"): names follow Prometheus'
conventions (``_total`` counters, ``_seconds`` / ``_bytes`` units, histograms), every value is
the service's own number, histogram buckets are cumulative."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.types import VerifyResult
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import VerifyOutcome
from edgespec.runtime.server.counters import (
    Histogram,
    ServiceCounters,
)
from tests.runtime.server.test_link_and_counters import ENGINE

pytest.importorskip("prometheus_client")


def _counters() -> ServiceCounters:
    c = ServiceCounters(busy=True, num_expired=6, num_sessions_opened=7, num_sessions_closed=3,
                        num_resent=5)  # fmt: skip
    outcome = VerifyOutcome(VerifyResult(4, 2, 2, 9, (5, 6)), (5, 6, 9), False, 5)
    c.answered(outcome, 0.003)
    c.answered(outcome, 0.2)
    c.rejected(ErrorCode.NOT_FOUND)
    c.rejected(ErrorCode.NOT_FOUND)
    c.rejected(ErrorCode.RESOURCE_EXHAUSTED)
    return c


def _samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from edgespec.runtime.server.prometheus import _Collector

    metrics = _counters().metrics(ENGINE, 2)
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in _Collector(lambda: metrics).collect()
        for s in family.samples
    }


def test_families_have_conventional_names_and_types() -> None:
    from edgespec.runtime.server.prometheus import _Collector

    metrics = ServiceCounters().metrics(ENGINE, 0)
    families = {f.name: f.type for f in _Collector(lambda: metrics).collect()}
    gauges = ["queue_depth", "open_sessions", "cached_tokens", "cached_bytes", "busy"]
    counters = ["batches", "forwarded_tokens", "cache_hits", "cache_misses", "evictions"]
    counters += [
        "reprefills",
        "prefill_parts",
        "resent_verifications",
        "expired_sessions",
        "verifications",
        "drafted_tokens",
    ]
    counters += ["accepted_tokens", "committed_tokens", "opened_sessions", "closed_sessions"]
    counters += ["rejected_requests", "semantic_sessions", "accepted_mismatches"]
    histograms = ["batch_size", "batch_seconds", "queue_wait_seconds"]
    assert families == {
        **{f"edgespec_{g}": "gauge" for g in gauges},
        **{f"edgespec_{c}": "counter" for c in counters},  # samples end in _total
        **{f"edgespec_{h}": "histogram" for h in histograms},
    }


def test_values_are_the_services_numbers() -> None:
    got = _samples()
    want = {
        "edgespec_queue_depth": 2,
        "edgespec_open_sessions": 4,
        "edgespec_cached_tokens": 30,
        "edgespec_cached_bytes": 3000,
        "edgespec_busy": 1,
        "edgespec_batches_total": 0,
        "edgespec_forwarded_tokens_total": 40,
        "edgespec_cache_hits_total": 3,
        "edgespec_cache_misses_total": 1,
        "edgespec_evictions_total": 5,
        "edgespec_reprefills_total": 2,
        "edgespec_prefill_parts_total": 11,
        "edgespec_resent_verifications_total": 5,
        "edgespec_expired_sessions_total": 6,
        "edgespec_verifications_total": 2,
        "edgespec_drafted_tokens_total": 8,
        "edgespec_accepted_tokens_total": 4,
        "edgespec_committed_tokens_total": 6,
        "edgespec_opened_sessions_total": 7,
        "edgespec_closed_sessions_total": 3,
    }
    for name, value in want.items():
        assert got[(name, ())] == float(value), name
    rejected = {
        dict(labels)["code"]: v for (n, labels), v in got.items() if n.startswith("edgespec_rej")
    }
    assert rejected == {c.value: 0.0 for c in ErrorCode} | {
        "NOT_FOUND": 2.0,
        "RESOURCE_EXHAUSTED": 1.0,
    }


def test_histograms_are_cumulative_with_sum_and_count() -> None:
    got = _samples()
    assert got[("edgespec_queue_wait_seconds_count", ())] == 2.0
    assert got[("edgespec_queue_wait_seconds_sum", ())] == pytest.approx(0.203)
    bucket = "edgespec_queue_wait_seconds_bucket"
    assert got[(bucket, (("le", "0.001"),))] == 0.0
    assert got[(bucket, (("le", "0.005"),))] == 1.0  # 0.003
    assert got[(bucket, (("le", "0.1"),))] == 1.0
    assert got[(bucket, (("le", "0.25"),))] == 2.0  # 0.2
    assert got[(bucket, (("le", "+Inf"),))] == 2.0


def test_a_value_on_a_bound_falls_in_its_bucket() -> None:
    h = Histogram((1.0, 2.0))
    for v in (1.0, 2.0, 2.5):
        h.observe(v)
    snap = h.snapshot()
    assert (snap.cumulative, snap.count, snap.sum) == ((1, 2), 3, 5.5)


def test_batches_are_observed_in_the_batch_histograms() -> None:
    from edgespec.core.types import PendingVerification

    c = ServiceCounters()
    entries = [PendingVerification(i, f"s{i}", "c", 0.0, 2, 3, 0) for i in range(3)]
    c.record_batch(entries, 1.0, 1.02)
    m = c.metrics(ENGINE, 0)
    assert m.batch_size.cumulative[:3] == (0, 0, 1)  # buckets 1, 2, 4
    assert m.batch_seconds.count == 1
    assert m.batch_seconds.sum == pytest.approx(0.02)
    assert dataclasses.replace(m.stats).num_batches == 1


def test_every_metric_the_docs_name_is_one_the_server_or_endpoint_exports() -> None:
    """DEPLOY.md named edgespec_num_cached_tokens, edgespec_num_cached_bytes and
    edgespec_num_reprefills_total: an alert on them watches an empty series."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    named = {m for p in docs for m in re.findall(r"\bedgespec_[a-z_]+", p.read_text())}
    exported = {name for name, _ in _samples()}
    exported |= {f"{name}_bucket" for name, _ in _samples() if name.endswith("_count")}
    exported |= {name.removesuffix("_count") for name, _ in _samples() if name.endswith("_count")}
    endpoint = "\n".join(p.read_text() for p in (root / "edgespec/runtime/openai_api").glob("*.py"))
    exported |= {
        f"edgespec_openai_{n}" for n in re.findall(r'\("([a-z_]+)", "(?:gauge|counter)"', endpoint)
    }
    from edgespec.runtime.openai_api.request_metrics import RequestMetrics

    requests = RequestMetrics(lambda: 0.0).metrics().splitlines()  # its names are built
    exported |= {re.split(r"[{ ]", line)[0] for line in requests if not line.startswith("#")}
    exported |= {n.removesuffix("_count") for n in exported if n.startswith("edgespec_openai_")}
    assert len(named) > 20 and not named - exported, sorted(named - exported)
