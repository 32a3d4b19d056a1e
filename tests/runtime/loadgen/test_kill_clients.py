"""A ``kill-clients`` fault kills the live client processes in turn, at most as many as
are left: a fault can fire after the arrivals' end (a restart-server before it waits for
a request mid-generation), where a killed process is not started again, and a later
fault asking for more than remain kills those (it used to index a retired one and stop
the run with a KeyError)."""

from __future__ import annotations

import time

from edgespec.runtime.loadgen.run import LoadRun, _Worker
from edgespec.runtime.loadgen.spec import Fault, LoadSpec, ServerAccess, SloShare
from edgespec.runtime.loadgen.worker import WorkerSpec


class _Proc:
    def __init__(self) -> None:
        self.killed = False

    def kill(self) -> None:
        self.killed = True

    def join(self) -> None:
        pass


class _Conn:
    def poll(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _run_with_two_processes() -> tuple[LoadRun, list[str]]:
    load = LoadSpec(num_clients=4, num_procs=2, arrivals="closed", rate_per_s=None,
                    duration_s=1.0, drain_s=1.0, slo_mix=(SloShare("default", None, 1.0),),
                    max_new_tokens=4, gamma=2, draft="ngram", seed=0)  # fmt: skip
    said: list[str] = []
    run = LoadRun(load, ServerAccess("localhost:1"), prompts=((1, 2),), vocab_size=8,
                  say=said.append, run_tag="t")  # fmt: skip
    for index in range(2):
        spec = WorkerSpec(index, 0, "t", run._client_ids(index), ServerAccess("localhost:1"),
                          ((1, 2),), load, 8)  # fmt: skip
        run._workers[index] = _Worker(spec, _Proc(), _Conn())  # type: ignore[arg-type]
    return run, said


def test_kills_after_the_arrivals_end_take_only_the_processes_left() -> None:
    run, said = _run_with_two_processes()
    procs = [w.proc for w in run._workers.values()]
    over_s = time.monotonic() - 1.0  # the arrivals ended a second ago: no process comes back
    run._apply(Fault("kill-clients", 11.0, 1), start_s=over_s - 11.0, end_s=over_s)
    assert sorted(run._workers) == [1] and procs[0].killed and not procs[1].killed
    run._apply(Fault("kill-clients", 11.5, 2), start_s=over_s - 11.5, end_s=over_s)
    assert run._workers == {} and procs[1].killed
    details = [f.detail for f in run._faults]
    assert details == [
        "1 client processes (2 clients) killed, 0 restarted (arrivals over)",
        "1 of 2 asked (1 left) client processes (2 clients) killed, 0 restarted (arrivals over)",
    ]
    assert [line.split("] ", 1)[1] for line in said] == details


def test_a_kill_after_the_drains_end_counts_its_requests_lost() -> None:
    """A restart-server fault that waited past the drain's end holds a later kill-clients
    back until then: the killed process's requests were still running when the drain ended,
    lost as the drain's end counts them (they were counted killed by a fault)."""
    run, _ = _run_with_two_processes()
    run._workers[0].requests.in_flight.add("r-early")
    run._workers[1].requests.in_flight.add("r-late")
    now = time.monotonic()
    run._tally.drain_end_s = now + 60.0
    run._apply(Fault("kill-clients", 1.0, 1), start_s=now - 1.0, end_s=now - 0.5)
    run._tally.drain_end_s = time.monotonic() - 0.1  # the drain is over
    run._apply(Fault("kill-clients", 1.5, 1), start_s=now - 1.5, end_s=now - 0.5)
    assert run._tally.killed == ["r-early"]
    assert run._tally.lost == [("r-late", "still running 1 s after the arrivals ended")]
