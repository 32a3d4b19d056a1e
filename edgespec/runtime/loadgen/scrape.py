"""The server's Prometheus endpoint read before and after a load, and its counts set
beside the load generator's own (docs/RUNTIME.md, "Observability"): on a run without faults,
failed requests or a server restart they must agree exactly (:func:`compared`)."""

from __future__ import annotations

import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.runtime.loadgen.messages import Finished
from edgespec.runtime.loadgen.outcome import RunOutcome

COMPARED: tuple[tuple[str, str], ...] = (  # (server counter, what the clients counted)
    ("edgespec_verifications_total", "rounds"),
    ("edgespec_drafted_tokens_total", "drafted tokens"),
    ("edgespec_accepted_tokens_total", "accepted tokens"),
    ("edgespec_committed_tokens_total", "output tokens"),
    ("edgespec_opened_sessions_total", "sessions opened (requests + reconnects)"),
    ("edgespec_closed_sessions_total", "sessions closed"),
    ("edgespec_queue_wait_seconds_count", "rounds"),
)


def scrape(url: str, timeout_s: float = 10.0) -> dict[str, float]:
    """Every unlabelled sample of ``url`` (a Prometheus text page) by name."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        text = response.read().decode()
    return {
        s.name: float(s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.labels
    }


@dataclass(frozen=True, slots=True)
class Agreement:
    """One counter: the server's increase over the load and the clients' own count."""

    metric: str
    what: str
    server: float
    clients: float

    @property
    def agrees(self) -> bool:
        return self.server == self.clients


def client_counts(finished: Sequence[Finished]) -> dict[str, float]:
    """What the clients counted, named as in :data:`COMPARED`."""
    rounds = sum(f.record.num_rounds for f in finished)
    sessions = sum(1 + f.num_reconnects for f in finished)
    return {
        "rounds": rounds,
        "drafted tokens": sum(f.record.num_drafted for f in finished),
        "accepted tokens": sum(f.record.num_accepted for f in finished),
        "output tokens": sum(f.record.num_output_tokens for f in finished),
        "sessions opened (requests + reconnects)": sessions,
        "sessions closed": sessions,
    }


def agreement(
    before: dict[str, float], after: dict[str, float], finished: Sequence[Finished]
) -> tuple[Agreement, ...]:
    """Each compared counter's increase from ``before`` to ``after`` against the clients'."""
    counts = client_counts(finished)
    return tuple(
        Agreement(metric, what, after.get(metric, 0.0) - before.get(metric, 0.0), counts[what])
        for metric, what in COMPARED
    )


def compared(
    before: dict[str, float] | None, after: dict[str, float] | None, outcome: RunOutcome
) -> tuple[tuple[Agreement, ...] | None, str]:
    """The counters' :func:`agreement` with the clients, or ``None`` and why they are not
    compared: no page read; faults or failed requests (the clients cannot count what the
    server did); the server restarted during the run (a counter went backwards: a new
    process counts from 0), or clients reconnected (a round the server counted may be lost
    with its answer)."""
    if before is None or after is None:
        return None, "no Prometheus page (--metrics-url)"
    if outcome.faults or outcome.failed or outcome.lost or outcome.killed:
        return None, "faults or failed requests: the clients cannot count what the server did"
    if any(after.get(metric, 0.0) < before.get(metric, 0.0) for metric, _ in COMPARED):
        return None, "the server restarted during the run: its counters went backwards"
    reconnects = sum(f.num_reconnects for f in outcome.finished)
    if reconnects:
        return None, (f"the clients reconnected {reconnects} time{'s' if reconnects > 1 else ''}"
                      ": the server restarted or lost sessions during the run")  # fmt: skip
    return agreement(before, after, outcome.finished), ""
