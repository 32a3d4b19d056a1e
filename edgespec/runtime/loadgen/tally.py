"""A load run's tally: every request's fate from what its client process says (started,
committed its first tokens, finished, failed) or from the end of that process (killed by a
fault; lost: still running when the drain ended, or in a process that died on its own), and
every Poisson arrival no client started (never served: dropped, or still queued)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from edgespec.runtime.loadgen.messages import Arrived, Failed, Finished, Progressed, Started
from edgespec.runtime.loadgen.outcome import FaultEvent, NeverServed, RunOutcome
from edgespec.runtime.loadgen.spec import SloShare


@dataclass(slots=True)
class Requests:
    """One client process's requests under way: started and not ended (``progressed``:
    those of them with tokens committed) and arrived but not started (``queued``: each
    one's SLO class)."""

    in_flight: set[str] = field(default_factory=set)
    progressed: set[str] = field(default_factory=set)
    queued: dict[str, int] = field(default_factory=dict)


class Tally:
    """The requests of one run by fate. ``drain_end_s`` (monotonic, once the clock starts):
    a request still running then is lost, one whose finish is read only later included
    (its record says when it finished)."""

    def __init__(self, slo_mix: tuple[SloShare, ...], drain_s: float) -> None:
        self._slo_mix = slo_mix
        self.drained = f"still running {drain_s:g} s after the arrivals ended"
        self.drain_end_s = math.inf
        self.finished: list[Finished] = []
        self.failed: list[Failed] = []
        self.killed: list[str] = []
        self.lost: list[tuple[str, str]] = []
        self.never_served: list[NeverServed] = []
        self.num_started = 0

    def _never(self, request_id: str, slo_index: int, dropped: bool) -> None:
        slo = self._slo_mix[slo_index]
        self.never_served.append(
            NeverServed(request_id, slo.name, slo.target_tokens_per_s, dropped)
        )

    def take(self, requests: Requests, message: object) -> bool:
        """Count ``message``, from the process whose requests under way are ``requests``;
        ``False`` for a message about no request."""
        if isinstance(message, Arrived):
            if message.dropped:
                self._never(message.request_id, message.slo_index, True)
            else:
                requests.queued[message.request_id] = message.slo_index
        elif isinstance(message, Started):
            self.num_started += 1
            requests.queued.pop(message.request_id, None)
            requests.in_flight.add(message.request_id)
        elif isinstance(message, Progressed):
            requests.progressed.add(message.request_id)
        elif isinstance(message, Finished | Failed):
            requests.in_flight.discard(message.request_id)
            requests.progressed.discard(message.request_id)
            if isinstance(message, Failed):
                self.failed.append(message)
            elif message.record.finish_s > self.drain_end_s:
                self.lost.append((message.request_id, self.drained))
            else:
                self.finished.append(message)
        else:
            return False
        return True

    def retire(self, requests: Requests, why: str | None) -> None:
        """The process of ``requests`` is gone: its requests under way were killed (``why``
        is ``None``) or lost for ``why``; its queued arrivals were never served."""
        for request_id, slo_index in requests.queued.items():
            self._never(request_id, slo_index, False)
        for request_id in sorted(requests.in_flight):
            if why is None:
                self.killed.append(request_id)
            else:
                self.lost.append((request_id, why))

    def outcome(
        self,
        start_s: float,
        arrivals_end_s: float,
        last_exit_s: float,
        faults: tuple[FaultEvent, ...],
        run_tag: str,
    ) -> RunOutcome:
        """The run's outcome; its ``end_s``: the latest of its finishes and of
        ``last_exit_s`` (when a process last exited; at most the arrivals' end)."""
        ends = [f.record.finish_s for f in self.finished]
        return RunOutcome(start_s, arrivals_end_s, max([*ends, min(last_exit_s, arrivals_end_s)]),
                          self.num_started, tuple(self.finished), tuple(self.failed),
                          tuple(self.killed), tuple(self.lost), faults,
                          tuple(self.never_served), run_tag)  # fmt: skip
