"""A load run's outcome: every request by its fate, the arrivals never served, the faults
as applied, and the run's tag (the first part of each of its request ids)."""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.runtime.loadgen.messages import Failed, Finished


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """A fault as applied: when (seconds after the start), what, and how long the server
    took to come back (restarts); ``due_s``: when ``--faults`` asked for it (a fault due
    while a restart runs is applied once it ends); ``waited_s``: how long a restart waited
    for a request mid-generation to interrupt."""

    kind: str
    at_s: float
    detail: str
    restart_s: float | None = None
    due_s: float | None = None
    waited_s: float = 0.0


@dataclass(frozen=True, slots=True)
class NeverServed:
    """A Poisson arrival no client started: ``dropped`` when it came with the process's
    queue full (``--max-queued``), else it was still queued when the arrivals ended (or
    its client process was killed). It counts as a miss of its SLO class."""

    request_id: str
    slo_class: str
    target_tokens_per_s: float | None
    dropped: bool


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """Every request of the run by its fate, and the run's span: ``start_s`` (monotonic),
    ``arrivals_end_s`` (no request starts after it) and ``end_s`` (the last request ended).
    ``run_tag``: chosen once per run, it begins every request id (``TAG.client-000.0.3``),
    so two runs on one server never share a session id."""

    start_s: float
    arrivals_end_s: float
    end_s: float
    num_started: int
    finished: tuple[Finished, ...]
    failed: tuple[Failed, ...]
    killed: tuple[str, ...]
    lost: tuple[tuple[str, str], ...]  # (request id, why)
    faults: tuple[FaultEvent, ...]
    never_served: tuple[NeverServed, ...]
    run_tag: str

    @property
    def num_dropped(self) -> int:
        return sum(n.dropped for n in self.never_served)

    @property
    def num_unserved(self) -> int:
        """Arrivals queued that no client started before the arrivals ended."""
        return len(self.never_served) - self.num_dropped

    @property
    def num_arrived(self) -> int:
        """Every request that arrived: started, or never served."""
        return self.num_started + len(self.never_served)
