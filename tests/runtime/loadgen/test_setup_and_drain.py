"""When a load's clock runs: a client process is set up (its first drafter built, which
imports torch and the draft backends) before it says ready, so no request's latency holds
it (a first request paid 0.8–3.5 s of imports in its TTFT and device wait); and the drain
ends on time: a request still running ``drain_s`` after the arrivals ended is lost and its
session closed, even when the parent reads its finish only later (one that finished 0.75 s
after the drain's end counted as finished while the parent waited for another process to
exit)."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from edgespec.core.types import RequestRecord, SamplingParams
from edgespec.runtime.edge import draft_backends
from edgespec.runtime.loadgen.messages import Finished, Started
from edgespec.runtime.loadgen.run import LoadRun
from edgespec.runtime.loadgen.spec import LoadSpec, ServerAccess, SloShare
from edgespec.runtime.loadgen.tally import Requests, Tally
from edgespec.runtime.loadgen.worker import WorkerSpec, worker_main
from edgespec.runtime.messages import SessionSpec
from tests.runtime.conftest import ServerFactory

MIX = (SloShare("default", None, 1.0),)
SETUP_S = 2.0  # what the first drafter's imports cost in the test
EXIT_S = 2.0  # how long a process that said done takes to exit in the test


def _record(request_id: str, finish_s: float) -> RequestRecord:
    return RequestRecord(request_id, "c", "default", 0, finish_s - 1, finish_s - 0.5, finish_s,
                         3, 2, 1, 4, 1)  # fmt: skip


def test_a_clients_setup_comes_before_ready_not_in_its_first_request(
    make_server: ServerFactory, monkeypatch: Any
) -> None:
    """A first drafter that takes ``SETUP_S`` to build (as torch's import does) is built
    before the process says ready; the first request's TTFT and device wait hold none of it."""
    built: list[float] = []
    make_drafter = draft_backends.make_drafter

    def slow_first(*args: Any) -> Any:
        if not built:
            time.sleep(SETUP_S)
            built.append(time.monotonic())
        return make_drafter(*args)

    monkeypatch.setattr(draft_backends, "make_drafter", slow_first)
    server = make_server()
    load = LoadSpec(1, 1, "closed", None, 0.5, 10.0, MIX, 4, 4, "ngram", 0)
    access = ServerAccess(f"127.0.0.1:{server.port}")
    spec = WorkerSpec(0, 0, "feedc0de", ("feedc0de.client-000",), access, ((1, 2, 3, 1, 2),),
                      load, 64)  # fmt: skip
    ours, theirs = multiprocessing.Pipe()
    process = threading.Thread(target=worker_main, args=(spec, theirs), daemon=True)
    process.start()
    assert ours.poll(60) and ours.recv() == "ready"
    ready_s = time.monotonic()
    assert built and built[0] <= ready_s  # the first drafter was built, then "ready" said
    ours.send(time.monotonic() + 0.5)
    said: list[object] = []
    while ours.poll(60) and (message := ours.recv()) != "done":
        said.append(message)
    process.join(10)
    first = next(m for m in said if isinstance(m, Finished)).record
    assert first.device_wait_s < 0.1 and first.ttft_s < SETUP_S / 4, first


def test_a_finish_after_the_drain_is_lost() -> None:
    """The record says when a request finished: after the drain's end, it is lost."""
    tally = Tally(MIX, 0.5)
    tally.drain_end_s = 10.0
    requests = Requests()
    for request_id in ("a", "b"):
        tally.take(requests, Started(request_id, 0, 0, 0))
    tally.take(requests, Finished("a", 0, _record("a", 10.0), (1, 2), 0))
    tally.take(requests, Finished("b", 0, _record("b", 10.01), (1, 2), 0))
    assert [f.request_id for f in tally.finished] == ["a"]
    assert tally.lost == [("b", "still running 0.5 s after the arrivals ended")]
    assert requests.in_flight == set()


Script = Callable[[WorkerSpec, Connection, threading.Event], None]


class _Process:
    """A client process played by a thread running ``script`` on its own copy of the pipe
    (the parent closes its copy of the child's end); killed, the script is told; joined,
    one that ended on its own takes ``EXIT_S`` more to exit (once)."""

    def __init__(self, script: Script, spec: WorkerSpec, conn: Connection) -> None:
        self.killed = threading.Event()
        self.exitcode: int | None = None
        mine = Connection(os.dup(conn.fileno()))
        self._thread = threading.Thread(target=script, args=(spec, mine, self.killed))

    def start(self) -> None:
        self._thread.start()

    def kill(self) -> None:
        self.killed.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join()
        if self.exitcode is None:
            if not self.killed.is_set():
                time.sleep(EXIT_S)
            self.exitcode = -9 if self.killed.is_set() else 0


class _Context:
    """``multiprocessing``'s spawn context with :class:`_Process` for processes."""

    def __init__(self, script: Script) -> None:
        self._script = script

    def Pipe(self) -> tuple[Connection, Connection]:
        return multiprocessing.Pipe()

    def Process(self, target: Any, args: tuple[WorkerSpec, Connection], daemon: bool) -> Any:
        return _Process(self._script, *args)


def test_a_request_running_at_the_drains_end_is_lost_and_its_session_closed(
    make_server: ServerFactory,
) -> None:
    """Process 0 is done at once but slow to exit; process 1's request holds a session
    and would finish 0.5 s after the drain's end: it is lost at the drain's end (not
    counted finished once the parent is done waiting for process 0) and its session is
    closed on the server."""
    server = make_server()
    access = ServerAccess(f"127.0.0.1:{server.port}")
    drain_s = 0.5

    def script(spec: WorkerSpec, conn: Connection, killed: threading.Event) -> None:
        conn.send("ready")
        end_s = conn.recv()
        if spec.index == 1:
            request_id = f"{spec.client_ids[0]}.0.0"
            verifier = access.client()
            verifier.open(SessionSpec(request_id, spec.client_ids[0], (1, 2, 3),
                                      SamplingParams(max_new_tokens=8), "default"))  # fmt: skip
            conn.send(Started(request_id, 1, 0, 0))
            if not killed.wait(end_s + drain_s + 0.5 - time.monotonic()):
                finish_s = time.monotonic()
                conn.send(Finished(request_id, 0, _record(request_id, finish_s), (4, 5), 0))
                killed.wait()
            verifier.close_channel()
        else:
            conn.send("done")
        conn.close()

    load = LoadSpec(2, 2, "closed", None, 0.5, drain_s, MIX, 8, 4, "ngram", 0)
    run = LoadRun(load, access, ((1, 2, 3),), 64, say=lambda _: None, run_tag="0a1b2c3d")
    run._ctx = _Context(script)  # type: ignore[assignment]
    outcome = run.run()
    assert outcome.finished == ()
    assert outcome.lost == (
        ("0a1b2c3d.client-001.0.0", "still running 0.5 s after the arrivals ended"),
    )
    # the report's window is the arrivals' span (it was ~0: "goodput over 0.000000001 s")
    assert outcome.end_s == outcome.arrivals_end_s > outcome.start_s
    with access.connected() as verifier:
        assert verifier.stats().num_sessions == 0
