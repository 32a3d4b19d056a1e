"""Running a load: client processes started and watched, faults applied at their times,
every request's fate tallied (:mod:`.tally`; a lost request's session closed once the
processes are gone)."""

from __future__ import annotations

import math
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from typing import Any

from edgespec.errors import UserInputError
from edgespec.runtime.child_processes import child_context
from edgespec.runtime.deferred_signals import signals_deferred
from edgespec.runtime.loadgen.messages import SetupFailed
from edgespec.runtime.loadgen.outcome import FaultEvent, RunOutcome
from edgespec.runtime.loadgen.server_process import ServerProcess
from edgespec.runtime.loadgen.spec import Fault, LoadSpec, ServerAccess
from edgespec.runtime.loadgen.tally import Requests, Tally
from edgespec.runtime.loadgen.worker import WorkerSpec, worker_main

PROGRESS_EVERY_S = 10.0
DRAIN_S = 0.2
CLOSE_TIMEOUT_S = 2.0  # for each lost request's CloseSession


def new_run_tag() -> str:
    """A run's tag: 8 random hex digits, the first part of each of its request ids."""
    return secrets.token_hex(4)


@dataclass(slots=True)
class _Worker:
    spec: WorkerSpec
    proc: Any
    conn: Connection
    requests: Requests = field(default_factory=Requests)
    ready: bool = False
    done: bool = False
    setup_error: str | None = None


class LoadRun:
    """One run of ``load`` against the server ``server_access`` reaches (``server``: the
    process to restart for a ``restart-server`` fault, ``None`` for a server the user runs;
    ``run_tag`` begins every request id: :func:`new_run_tag` when not given)."""

    def __init__(
        self,
        load: LoadSpec,
        server_access: ServerAccess,
        prompts: tuple[tuple[int, ...], ...],
        vocab_size: int,
        server: ServerProcess | None = None,
        draft_model_dir: str | None = None,
        say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
        run_tag: str | None = None,
    ) -> None:
        if server is None and any(f.kind == "restart-server" for f in load.faults):
            raise ValueError("a restart-server fault needs a server the bench runs")
        self._load = load
        self._access = server_access
        self._prompts = prompts
        self._vocab_size = vocab_size
        self._server = server
        self._draft_model_dir = draft_model_dir
        self._say = say
        self._run_tag = new_run_tag() if run_tag is None else run_tag
        self._ctx = child_context(worker_main.__module__)
        self._workers: dict[int, _Worker] = {}
        self._tally = Tally(load.slo_mix, load.drain_s)
        self._faults: list[FaultEvent] = []
        self._next_victim = 0
        self._end_s: float | None = None
        self._exited: list[Any] = []  # retired processes, joined once the run is over

    def _client_ids(self, index: int) -> tuple[str, ...]:
        """Process ``index``'s clients: ``TAG.client-000``, unique per run, so another run
        on the server (or a killed one's sessions) never shares their per-client quotas."""
        n, p = self._load.num_clients, self._load.num_procs
        return tuple(f"{self._run_tag}.client-{j:03d}" for j in range(index, n, p))

    def _spawn(self, index: int, incarnation: int) -> None:
        spec = WorkerSpec(index, incarnation, self._run_tag, self._client_ids(index), self._access,
                          self._prompts, self._load, self._vocab_size,
                          self._draft_model_dir)  # fmt: skip
        ours, theirs = self._ctx.Pipe()
        proc = self._ctx.Process(target=worker_main, args=(spec, theirs), daemon=True)
        with signals_deferred():  # a start cut short broke the child's read of its start data
            proc.start()
            theirs.close()  # the child holds the only other end: its exit is our EOF
            self._workers[index] = _Worker(spec, proc, ours)  # stopped with the others

    def _handle(self, worker: _Worker, message: object) -> None:
        if self._tally.take(worker.requests, message):
            return
        if message == "ready":
            worker.ready = True
            if self._end_s is not None:  # a replacement joins the running load
                worker.conn.send(self._end_s)
        elif isinstance(message, SetupFailed):
            worker.setup_error = message.message
        elif message == "done":
            worker.done = True

    def _read(self, worker: _Worker) -> bool:
        """Take every message waiting on ``worker``'s pipe; ``False`` at its end."""
        try:
            while worker.conn.poll():
                self._handle(worker, worker.conn.recv())
        except Exception:  # EOF, a closed pipe, or a message cut short by a kill
            return False
        return True

    def _retire(self, worker: _Worker, why: str | None) -> None:
        """``worker``'s process is gone or going: its unfinished requests were killed
        (``why`` is ``None``) or lost for ``why``; its queued arrivals were never served.
        It is joined once the run is over (a process's exit must not hold up the run)."""
        self._read(worker)
        worker.conn.close()
        self._exited.append(worker.proc)
        self._tally.retire(worker.requests, why)
        del self._workers[worker.spec.index]

    def _apply(self, fault: Fault, start_s: float, end_s: float) -> None:
        if fault.kind == "restart-server":
            assert self._server is not None
            begun_s = time.monotonic() - start_s
            self._stop_mid_request(end_s)
            at_s = time.monotonic() - start_s
            self._server.kill()
            seconds = self._server.start()
            self._faults.append(FaultEvent(fault.kind, at_s, "server killed, started again",
                                           seconds, waited_s=at_s - begun_s))  # fmt: skip
            self._say(f"[{at_s:6.1f} s] server killed; serving again after {seconds:.1f} s")
        else:
            self._kill_clients(fault.count, time.monotonic() - start_s, end_s)
        self._faults[-1] = replace(self._faults[-1], due_s=fault.at_s)  # a restart holds later ones

    def _kill_clients(self, count: int, at_s: float, end_s: float) -> None:
        """Kill ``count`` client processes, taken in turn (at most the live ones: after the
        arrivals' end a killed process is not started again, so fewer may be left than
        ``--faults`` asked for); each is started again while arrivals go on. One killed
        after the drain's end (a restart before it waited that long) had its requests lost,
        not killed: they were still running when the drain ended."""
        live = sorted(self._workers)
        victims = [live[(self._next_victim + i) % len(live)] for i in range(min(count, len(live)))]
        self._next_victim += len(victims)
        num_clients = num_restarted = 0
        for index in victims:
            worker = self._workers[index]
            worker.proc.kill()
            worker.proc.join()
            num_clients += len(worker.spec.client_ids)
            incarnation = worker.spec.incarnation
            # past the drain's end its requests were lost already (still running then)
            drained = time.monotonic() > self._tally.drain_end_s
            self._retire(worker, self._tally.drained if drained else None)
            if time.monotonic() < end_s:
                self._spawn(index, incarnation + 1)
                num_restarted += 1
        asked = "" if len(victims) == count else f" of {count} asked ({len(live)} left)"
        restarted = ("restarted" if num_restarted == len(victims)
                     else f"{num_restarted} restarted (arrivals over)")  # fmt: skip
        detail = (
            f"{len(victims)}{asked} client processes ({num_clients} clients) killed, {restarted}"
        )
        self._faults.append(FaultEvent("kill-clients", at_s, detail))
        self._say(f"[{at_s:6.1f} s] {detail}")

    def _mid_generation(self) -> bool:
        """Whether a request has committed tokens and not finished (the clients' pipes read
        first)."""
        for worker in list(self._workers.values()):
            self._read(worker)
        return any(w.requests.progressed for w in self._workers.values())

    def _stop_mid_request(self, end_s: float) -> None:
        """Stop (SIGSTOP) the server at a moment a request is mid-generation on it, so the
        kill that follows interrupts one whatever the machine's speed: once a request has
        committed tokens and not finished (it needs at least one more round), the server
        is stopped and the clients' pipes drained; if such a request is still unfinished
        it cannot finish now, and the server stays stopped. Otherwise it goes on and the
        wait repeats: on a slow machine past the end of arrivals, while requests are in
        flight, up to the end of the drain."""
        server = self._server
        assert server is not None
        while True:
            if self._mid_generation():
                server.pause()
                time.sleep(DRAIN_S)  # what the clients sent before the stop arrives
                if self._mid_generation():
                    return
                server.resume()
            now = time.monotonic()
            in_flight = any(w.requests.in_flight for w in self._workers.values())
            if now > self._tally.drain_end_s or (now > end_s and not in_flight):
                return
            time.sleep(0.02)

    def _start(self, timeout_s: float = 300.0) -> tuple[float, float]:
        """Start the client processes; once every one is ready, the clock starts: returns
        (start, end of arrivals), monotonic."""
        for index in range(self._load.num_procs):
            self._spawn(index, 0)
        deadline = time.monotonic() + timeout_s
        while not all(w.ready for w in self._workers.values()):
            for worker in list(self._workers.values()):
                if not self._read(worker) and not worker.ready:
                    self._stop_all()
                    why = worker.setup_error or "exited (see its output above)"
                    raise UserInputError(f"client process {worker.spec.index} could not start: "
                                         f"{why}")  # fmt: skip
            if time.monotonic() > deadline:
                self._stop_all()
                raise RuntimeError(f"client processes not ready after {timeout_s:g} s")
            time.sleep(0.05)
        start_s = time.monotonic()
        self._end_s = start_s + self._load.duration_s
        self._tally.drain_end_s = self._end_s + self._load.drain_s
        for worker in self._workers.values():
            worker.conn.send(self._end_s)
        return start_s, self._end_s

    def _stop_all(self) -> None:
        for worker in self._workers.values():
            worker.proc.kill()
            worker.proc.join()
            worker.conn.close()
        self._workers.clear()

    def run(self) -> RunOutcome:
        """Run the load: arrivals until ``duration_s``, then ``drain_s`` for the requests in
        flight; one still running at its end is lost (its process killed, its session
        closed), even when its finish is read later. Stopped part-way (Ctrl-C, SIGTERM, a
        failure), its client processes are killed and joined before it raises."""
        try:
            return self._run()
        except BaseException:
            self._stop_all()
            for proc in self._exited:
                proc.kill()
                proc.join()
            raise

    def _run(self) -> RunOutcome:
        start_s, end_s = self._start()
        pending = list(self._load.faults)
        last_report = start_s
        last_end = start_s
        while self._workers:
            now = time.monotonic()
            if pending and now >= start_s + pending[0].at_s:
                self._apply(pending.pop(0), start_s, end_s)
                continue
            if now > self._tally.drain_end_s:
                for worker in list(self._workers.values()):
                    worker.proc.kill()
                    self._retire(worker, self._tally.drained)
                last_end = now  # the run's span: nothing finished may have set it
                break
            if now - last_report >= PROGRESS_EVERY_S:
                last_report = now
                self._progress(now - start_s)
            fault_s = start_s + pending[0].at_s if pending else math.inf
            wake_s = min(self._tally.drain_end_s, fault_s)  # the drain's end is never overslept
            by_conn = {w.conn: w for w in self._workers.values()}
            for conn in wait(list(by_conn), min(0.5, max(wake_s - now, 0.0))):
                worker = by_conn[conn]  # type: ignore[index]
                if not self._read(worker) or worker.done:
                    self._retire(worker, None if worker.done else "its client process died")
                    last_end = time.monotonic()
        self._end()
        return self._tally.outcome(start_s, end_s, last_end, tuple(self._faults), self._run_tag)

    def _end(self) -> None:
        """Close the lost requests' sessions (their processes are gone, the server would
        hold them until its idle timeout; one reopened after a reconnect, under another id,
        is left to it), then join the retired processes."""
        if lost := [request_id for request_id, _ in self._tally.lost]:
            failure = self._access.close_sessions(lost, CLOSE_TIMEOUT_S)
            if failure is not None:
                self._say(f"the lost requests' sessions were not closed: {failure}")
        for proc in self._exited:
            proc.join(5)
            if proc.exitcode is None:  # said done but does not exit
                proc.kill()
                proc.join()

    def _progress(self, elapsed_s: float) -> None:
        tally = self._tally
        in_flight = sum(len(w.requests.in_flight) for w in self._workers.values())
        self._say(
            f"[{elapsed_s:6.1f} s] {len(tally.finished)} finished, {in_flight} in flight, "
            f"{len(tally.failed)} failed, {len(tally.killed)} killed"
        )
