"""A client process of the load: ``len(client_ids)`` drafting clients as threads, each
running distributed speculative decoding against the server (the drafter loop of
:mod:`edgespec.runtime.edge.drafter`, which reopens a session the server lost), reporting
every request's start and end on its own pipe (a killed process can only corrupt its own).

Closed loop: a client sends its next request as soon as the last one ends. Poisson: the
process's arrival thread draws arrivals at ``rate / num_procs`` per second (the processes'
arrivals together are Poisson at the rate), up to ``max_queued`` wait (one more is dropped)
and a free client takes the oldest while the arrivals last; the time it waited is the
request's ``device_wait_s``. Times are ``time.monotonic()``, one clock for
every process of the machine. A process is set up before it says ready (its draft model
loaded, a drafter built: torch and the draft backends imported), so no request's latency
holds its start, a replacement's after a kill included."""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.core.types import RequestRecord
from edgespec.errors import UserInputError
from edgespec.policies.window import StaticWindow
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.edge.progress import ProgressBudget
from edgespec.runtime.errors import RequestError
from edgespec.runtime.loadgen.messages import (
    Arrived,
    Failed,
    Finished,
    Progressed,
    SetupFailed,
    Started,
)
from edgespec.runtime.loadgen.spec import LoadSpec, ServerAccess
from edgespec.runtime.messages import SessionSpec

RETRY_TIMEOUT_S = 180.0  # how long a client keeps reopening its session while the server is down
RETRY_BACKOFF_S = 0.5


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What one client process runs: its clients, the server, the prompts and which life of
    the process this is (a killed process comes back as the next ``incarnation``). When to
    stop taking requests comes later, on the pipe, once the process is ready. ``run_tag``
    begins each request id and each client id (``TAG.client-000``, its requests'
    ``TAG.client-000.0.3``): another run's ids on the same server differ."""

    index: int
    incarnation: int
    run_tag: str
    client_ids: tuple[str, ...]
    server: ServerAccess
    prompts: tuple[tuple[int, ...], ...]
    load: LoadSpec
    vocab_size: int
    draft_model_dir: str | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """One request to run: which prompt and class, and when it arrived."""

    request_id: str
    prompt_index: int
    slo_index: int
    arrival_s: float


class _Client:
    """Everything a process's client threads share: the server client, the pipe, the jobs;
    made (the draft model loaded, a first drafter built) before the process says ready."""

    def __init__(self, spec: WorkerSpec, conn: Any) -> None:
        self.spec = spec
        self.end_s = 0.0  # set by worker_main from the parent's word
        self.verifier = spec.server.client()
        self._conn = conn
        self._lock = threading.Lock()
        self.draft_model = None
        if spec.draft_model_dir is not None and spec.load.mode == "distributed":
            import torch

            from edgespec.models.loading import load_model

            torch.set_num_threads(1)
            self.draft_model = load_model(spec.draft_model_dir, with_tokenizer=False).model
            _check_draft_vocab(spec.load.draft, self.draft_model, spec.vocab_size)
        if spec.load.mode == "distributed":
            self.drafter()  # the first imports the draft backends and torch: not in a request

    def send(self, message: object) -> None:
        with self._lock:
            self._conn.send(message)

    def drafter(self) -> Any:
        from edgespec.runtime.edge.draft_backends import make_drafter

        return make_drafter(self.spec.load.draft, self.draft_model, self.spec.vocab_size)

    def run(self, client_id: str, job: Job) -> None:
        load = self.spec.load
        slo = load.slo_mix[job.slo_index]
        self.send(Started(job.request_id, self.spec.index, self.spec.incarnation, job.prompt_index))
        # a restart takes the budget's reconnects, and as long as the retries may
        budget = ProgressBudget(timeout_s=RETRY_TIMEOUT_S)
        options = DraftOptions(job.request_id, client_id, slo.name, RETRY_TIMEOUT_S,
                               RETRY_BACKOFF_S, first_open_retry_s=RETRY_TIMEOUT_S,
                               progress=budget)  # fmt: skip
        first = Progressed(job.request_id)
        said: list[Progressed] = []

        def on_tokens(tokens: tuple[int, ...]) -> None:
            if tokens and not said:
                said.append(first)
                self.send(first)

        sampling = load.request_sampling
        prompt = self.spec.prompts[job.prompt_index]
        try:
            if load.mode == "centralized":
                spec = SessionSpec(job.request_id, client_id, prompt, sampling, slo.name)
                request, output, reconnects = self._centralized(spec, budget, on_tokens)
                resends = 0
            else:
                result = generate(self.verifier, self.drafter(), prompt, sampling, options,
                                  StaticWindow(load.gamma), on_tokens,
                                  clock=time.monotonic)  # fmt: skip
                request, output = result.request, result.output_token_ids
                reconnects, resends = result.num_reconnects, result.num_resends
        except RequestError as exc:
            self._failed(Failed(job.request_id, job.prompt_index, exc.code.value, exc.message))
            return
        except Exception as exc:  # a client bug must be reported, not hang the run
            self._failed(Failed(job.request_id, job.prompt_index, "CLIENT_ERROR", repr(exc)))
            return
        started = request.arrival_s
        record = dataclasses.replace(
            request,
            arrival_s=min(job.arrival_s, started),
            device_wait_s=max(started - job.arrival_s, 0.0),
            slo_tokens_per_s=slo.target_tokens_per_s,
        )
        self.send(Finished(job.request_id, job.prompt_index, record, output, reconnects, resends))

    def _failed(self, failed: Failed) -> None:
        """Report a failed request, then back off as a client would before its next one."""
        self.send(failed)
        time.sleep(RETRY_BACKOFF_S)

    def _centralized(
        self, spec: SessionSpec, budget: ProgressBudget,
        on_tokens: Callable[[tuple[int, ...]], None],
    ) -> tuple[RequestRecord, tuple[int, ...], int]:  # fmt: skip
        """The server decodes ``spec`` alone; one round per step it streams; a stream the
        server lost (a restart) goes on from what it committed, within ``budget``
        (:func:`~edgespec.runtime.edge.server_side.resumed_chunks`), each time counted as a
        reconnect."""
        from edgespec.runtime.edge.server_side import resumed_chunks

        start = time.monotonic()
        first, steps, reconnects = None, 0, 0
        output: list[int] = []

        def reconnected(*_: object) -> None:
            nonlocal reconnects
            reconnects += 1

        retry_s = (RETRY_TIMEOUT_S, RETRY_TIMEOUT_S)
        chunks = resumed_chunks(self.verifier, spec, False, 1, None, time.monotonic, retry_s,
                                budget, on_reconnect=reconnected)  # fmt: skip
        for chunk in chunks:
            steps += 1
            if chunk and first is None:
                first = time.monotonic()
            output.extend(chunk)
            on_tokens(chunk)
        finish = time.monotonic()
        record = RequestRecord(spec.session_id, spec.client_id, spec.slo_class, 0, start,
                               finish if first is None else first, finish,
                               len(spec.prompt_token_ids), len(output), steps, 0, 0)  # fmt: skip
        return record, tuple(output), reconnects


def _pick(rng: np.random.Generator, spec: WorkerSpec, request_id: str, now: float) -> Job:
    shares = [s.share for s in spec.load.slo_mix]
    slo_index = int(rng.choice(len(shares), p=shares))
    return Job(request_id, int(rng.integers(len(spec.prompts))), slo_index, now)


def _closed_loop(client: _Client, slot: int) -> None:
    spec = client.spec
    client_id = spec.client_ids[slot]
    rng = np.random.default_rng([spec.load.seed, spec.index, spec.incarnation, slot])
    n = 0
    while time.monotonic() < client.end_s:
        request_id = f"{client_id}.{spec.incarnation}.{n}"  # client_id: TAG.client-000
        client.run(client_id, _pick(rng, spec, request_id, time.monotonic()))
        n += 1


def _poisson_arrivals(client: _Client, jobs: queue.Queue[Job]) -> None:
    """Draw Poisson arrivals until ``end_s``; each is told to the parent (:class:`Arrived`)
    and queued for a free client, or dropped when ``jobs`` is full (``--max-queued``)."""
    spec = client.spec
    rate = (spec.load.rate_per_s or 0.0) / spec.load.num_procs
    rng = np.random.default_rng([spec.load.seed, spec.index, spec.incarnation, 1 << 20])
    at = time.monotonic()
    n = 0
    while True:
        at += float(rng.exponential(1.0 / rate))
        if at >= client.end_s:
            break
        time.sleep(max(at - time.monotonic(), 0.0))
        job = _pick(rng, spec, f"{spec.run_tag}.w{spec.index}.{spec.incarnation}.{n}", at)
        n += 1
        dropped = jobs.full()  # only this thread puts: not full now, not full at the put
        client.send(Arrived(job.request_id, job.slo_index, dropped))
        if not dropped:
            jobs.put_nowait(job)


def _poisson_client(client: _Client, slot: int, jobs: queue.Queue[Job]) -> None:
    """Take the oldest queued arrival while the arrivals last; one still queued when they
    end is never started (the parent counts it unserved)."""
    while (now := time.monotonic()) < client.end_s:
        try:
            job = jobs.get(timeout=client.end_s - now)
        except queue.Empty:
            return
        if time.monotonic() >= client.end_s:
            return
        client.run(client.spec.client_ids[slot], job)


def _check_draft_vocab(name: str, model: Any, target_vocab: int) -> None:
    """``--draft``'s model takes every token id of the server's target, or a
    :class:`UserInputError` naming the flag (a narrower draft failed every request with
    ``IndexError`` once the target's output passed its vocabulary)."""
    from edgespec.config import ConfigError
    from edgespec.runtime.edge.draft_backends import check_draft_vocab

    try:
        check_draft_vocab(name, model, target_vocab)
    except ConfigError as exc:
        raise UserInputError(f"--draft: {exc.message}") from None


def worker_main(spec: WorkerSpec, conn: Any) -> None:
    """The process's body: say ``"ready"`` once set up (:class:`_Client`; or
    :class:`SetupFailed`), take ``end_s`` (monotonic) from the parent, run the clients
    until then and until their requests are done, then send ``"done"``."""
    try:
        client = _Client(spec, conn)
    except UserInputError as exc:  # a draft the server's target cannot use: said as it is
        conn.send(SetupFailed(str(exc)))
        conn.close()
        return
    except Exception as exc:  # a draft that does not load: one line to the parent
        conn.send(SetupFailed(f"{type(exc).__name__}: {exc}"))
        conn.close()
        return
    client.send("ready")
    client.end_s = float(conn.recv())
    threads = []
    if spec.load.arrivals == "closed":
        for slot in range(len(spec.client_ids)):
            threads.append(threading.Thread(target=_closed_loop, args=(client, slot)))
    else:
        jobs: queue.Queue[Job] = queue.Queue(maxsize=spec.load.max_queued or 0)
        threads.append(threading.Thread(target=_poisson_arrivals, args=(client, jobs)))
        for slot in range(len(spec.client_ids)):
            threads.append(threading.Thread(target=_poisson_client, args=(client, slot, jobs)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.send("done")
    conn.close()
