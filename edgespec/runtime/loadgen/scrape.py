"""The server's Prometheus endpoint read before and after a load: its counts set beside the
load generator's own (docs/RUNTIME.md, "Observability"), which on a run without faults,
failed requests or a server restart must agree exactly (:func:`compared`), and its
verification passes, which only the server counts (:func:`server_figures`)."""

from __future__ import annotations

import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.errors import UserInputError
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
PASSES = ("edgespec_batches_total", "edgespec_forwarded_tokens_total",
          "edgespec_batch_size_sum", "edgespec_batch_seconds_sum")  # fmt: skip
"""The counters of the server's verification passes: how many, the tokens they forwarded,
the sessions they held (the batch-size histogram's sum) and their wall time."""
NO_PAGE = "no Prometheus page (--metrics-url)"


def scrape(url: str, timeout_s: float = 10.0) -> dict[str, float]:
    """Every unlabelled sample of ``url`` (a Prometheus text page) by name; a page that
    cannot be read or is no Prometheus page is a :class:`ScrapeError` saying why."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            text = response.read(MAX_PAGE_BYTES + 1).decode()
        if len(text) > MAX_PAGE_BYTES:
            raise ValueError(f"a page over {MAX_PAGE_BYTES} bytes")
        return {
            s.name: float(s.value)
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if not s.labels
        }
    except (OSError, ValueError) as exc:  # urllib's URLError is an OSError
        why = getattr(exc, "reason", None) or exc
        raise ScrapeError(f"--metrics-url {url}: cannot read a Prometheus page: {why}") from None


MAX_PAGE_BYTES = 16 << 20
"""The most of a Prometheus page read (the server's is a few KiB)."""


class ScrapeError(UserInputError):
    """The ``--metrics-url`` page could not be read, or is no Prometheus page."""


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
    compared: no page read; faults, failed, lost or killed requests, each counted (the
    clients cannot count what the server did for them); the server restarted during the
    run (a counter went backwards: a new process counts from 0), or clients reconnected (a
    round the server counted may be lost with its answer)."""
    if before is None or after is None:
        return None, NO_PAGE
    if what := _uncounted(outcome):
        return None, f"{what}: the clients cannot count what the server did for them"
    if (note := _restarted(before, after, outcome, [m for m, _ in COMPARED])) is not None:
        return None, note
    return agreement(before, after, outcome.finished), ""


def _uncounted(outcome: RunOutcome) -> str:
    """``2 faults, 3 requests lost``: what the clients cannot count the server's work for
    ("" when nothing)."""
    counts = (("fault", "faults", len(outcome.faults)),
              ("request failed", "requests failed", len(outcome.failed)),
              ("request lost", "requests lost", len(outcome.lost)),
              ("request killed", "requests killed", len(outcome.killed)))  # fmt: skip
    return ", ".join(f"{n} {one if n == 1 else many}" for one, many, n in counts if n)


def _restarted(
    before: dict[str, float], after: dict[str, float], outcome: RunOutcome, metrics: list[str]
) -> str | None:
    """Why the server may have restarted during the run (a new process counts from 0), or
    ``None``: the bench restarted it, one of ``metrics`` went backwards, or the clients
    reconnected (a server restarted by hand, or one that lost sessions)."""
    if any(f.kind == "restart-server" for f in outcome.faults):
        return "the server restarted during the run: a new process counts from 0"
    if any(after.get(metric, 0.0) < before.get(metric, 0.0) for metric in metrics):
        return "the server restarted during the run: its counters went backwards"
    reconnects = sum(f.num_reconnects for f in outcome.finished)
    if reconnects:
        return (f"the clients reconnected {reconnects} time{'s' if reconnects > 1 else ''}"
                ": the server restarted or lost sessions during the run")  # fmt: skip
    return None


@dataclass(frozen=True, slots=True)
class ServerFigures:
    """The server's verification passes over a load, its :data:`PASSES` counters'
    increase: ``num_batches`` passes forwarded ``num_forwarded_tokens`` tokens for
    ``num_batched_sessions`` sessions in all (Σ batch sizes) in ``busy_s`` seconds."""

    num_batches: int
    num_forwarded_tokens: int
    num_batched_sessions: int
    busy_s: float


def server_figures(
    before: dict[str, float] | None, after: dict[str, float] | None, outcome: RunOutcome
) -> tuple[ServerFigures | None, str]:
    """The server's :class:`ServerFigures` over the load, or ``None`` and why they are not
    measured: no page read, a page without one of the counters, or a restart during the
    run (:func:`_restarted`)."""
    if before is None or after is None:
        return None, NO_PAGE
    if missing := [m for m in PASSES if m not in after or m not in before]:
        return None, f"the server's page has no {missing[0]}"
    if (note := _restarted(before, after, outcome, list(PASSES))) is not None:
        return None, note
    batches, tokens, sessions, busy_s = (after[m] - before[m] for m in PASSES)
    return ServerFigures(round(batches), round(tokens), round(sessions), busy_s), ""
