"""The drafter processes of ``edgespec reproduce wisp-serving`` and how their rows come back.

Each client is a process of its own running a closed loop of requests against one server
(:func:`client`); it puts one :class:`ClientResult` on the queue: its rows, or the error
that stopped it (type and message). :func:`run_clients` collects one result per client and
raises a one-line :class:`UserInputError` naming the first client that failed, that exited
without putting anything (killed, out of memory), or that is still running
``HANG_GRACE_S`` past the run's end: it never waits on a dead or hung client. Clients are
forked from a fork server (:mod:`edgespec.runtime.child_processes`), not from this process:
a fork of a process whose gRPC threads are running can deadlock in the child's first call.

The run's ``seconds`` start when every client is connected (:class:`StartLine`), not when
the first process starts: starting a process and connecting takes from 0.6 s (one,
idle) to seconds (many on a busy machine), and a window that began before would have
given each client, and each system, what was left of it.
"""

from __future__ import annotations

import contextlib
import queue as queues
import time
from dataclasses import dataclass
from typing import Any

from edgespec.errors import UserInputError
from edgespec.runtime.child_processes import child_context
from edgespec.runtime.deferred_signals import signals_deferred

POLL_S = 1.0
"""How long the parent waits on the queue before it checks whether a client has died."""
HANG_GRACE_S = 300.0
"""How long past the run's end a client may still be running (a request in progress
finishes within it; a hung one is named and ended after it)."""
CONNECT_TIMEOUT_S = 300.0
"""How long a client may take from its start to connected (imports, the server's
vocabulary) before it is named and the run ends."""


@dataclass(frozen=True, slots=True)
class ClientResult:
    """What client ``index`` reports: its ``rows``, or its ``error`` (``Type: message``)."""

    index: int
    rows: list[dict[str, Any]] | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ClientPlan:
    """One server's clients: its ``address``, the SLO ``classes`` taken round-robin, the
    tokenized ``prompts``, the ``seconds`` each runs from the common start and ``max_new``
    tokens per request."""

    address: str
    classes: list[str]
    prompts: list[list[int]]
    seconds: float
    max_new: int


@dataclass(frozen=True, slots=True)
class StartLine:
    """The clients' common start: each puts its index on ``ready`` once connected and
    waits on ``go``; when all are ready the parent writes the run's end (wall-clock seconds)
    into ``until`` and sets ``go``. Made by :func:`start_line` from the children's context."""

    ready: Any
    go: Any
    until: Any


def start_line(context: Any) -> StartLine:
    return StartLine(context.Queue(), context.Event(), context.Value("d", 0.0))


def _requests(plan: ClientPlan, index: int, start: StartLine) -> list[dict[str, Any]]:
    from edgespec.core.types import SamplingParams
    from edgespec.policies.window import StaticWindow
    from edgespec.runtime.edge.draft_backends import make_drafter
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    prompts, slo_class = plan.prompts, plan.classes[index % len(plan.classes)]
    verifier = RemoteVerifier(plan.address, None, None, 120.0)
    drafter = make_drafter("ngram", None, verifier.vocab_size(), False, None, 0.0, 32)
    start.ready.put(index)
    if not start.go.wait(CONNECT_TIMEOUT_S + HANG_GRACE_S):  # the parent has named a client
        return []
    until: float = start.until.value
    rows = []
    k = index
    while time.time() < until:
        options = DraftOptions(f"c{index}-{k}", f"client{index}", slo_class)
        sampling = SamplingParams(max_new_tokens=plan.max_new)
        result = generate(
            verifier, drafter, prompts[k % len(prompts)], sampling, options, StaticWindow(4)
        )
        r = result.request
        rows.append(
            {
                "prompt": k % len(prompts),
                "class": slo_class,
                "tokens": list(result.output_token_ids),
                "tokens_per_s": r.tokens_per_s,
                "e2e_s": r.e2e_s,
                "finish": time.time(),
            }
        )
        k += len(prompts) // 3 + 1
    return rows


def client(plan: ClientPlan, index: int, out: Any, start: StartLine) -> None:
    """Client ``index``'s closed loop (n-gram drafting, static γ = 4, greedy) from the
    common ``start``; puts its :class:`ClientResult` on ``out``, the error instead of rows
    when one stops it."""
    try:
        rows = _requests(plan, index, start)
    except Exception as exc:  # reported to the parent, which names it; nothing is lost
        message = " ".join(str(exc).split())
        out.put(ClientResult(index, error=f"{type(exc).__name__}: {message}"))
        return
    out.put(ClientResult(index, rows=rows))


def collect(
    out: Any, workers: list[Any], classes: list[str], deadline: float = float("inf")
) -> list[dict[str, Any]]:
    """Every worker's rows from ``out``, in client order; a client's error, a client that
    exited without putting its result, or one still running at ``deadline`` (wall-clock
    time) is a :class:`UserInputError` naming it."""
    results: dict[int, ClientResult] = {}
    while len(results) < len(workers):
        try:
            result: ClientResult = out.get(timeout=POLL_S)
        except queues.Empty:
            dead = [i for i, w in enumerate(workers) if i not in results and w.exitcode is not None]
            if not dead:
                _check_deadline(workers, results, classes, deadline)
                continue
            try:  # what a client put before it exited is in the pipe by now
                result = out.get(timeout=POLL_S)
            except queues.Empty:
                i = dead[0]
                raise UserInputError(
                    f"{_who(i, classes)} exited with {workers[i].exitcode} without reporting "
                    "its rows"
                ) from None
        _check_failed(result, classes)
        results[result.index] = result
    return [row for i in sorted(results) for row in results[i].rows or []]


def _who(index: int, classes: list[str]) -> str:
    return f"client {index} (class {classes[index % len(classes)]})"


def _check_failed(result: ClientResult, classes: list[str]) -> None:
    if result.error is not None:
        raise UserInputError(f"{_who(result.index, classes)} failed: {result.error}")


def start_together(
    start: StartLine, out: Any, workers: list[Any], classes: list[str], seconds: float
) -> float:
    """Wait until every client is connected, then start them all: the run's end, ``seconds``
    from now (wall-clock). A client that fails or exits before it connects, or is not
    connected ``CONNECT_TIMEOUT_S`` after the wait began, is a :class:`UserInputError`
    naming it."""
    ready: set[int] = set()
    deadline = time.time() + CONNECT_TIMEOUT_S
    while len(ready) < len(workers):
        try:
            ready.add(start.ready.get(timeout=POLL_S))
            continue
        except queues.Empty:
            pass
        for i in (i for i in range(len(workers)) if i not in ready):
            if workers[i].exitcode is not None:
                with contextlib.suppress(queues.Empty):  # its error, if it put one
                    _check_failed(out.get(timeout=POLL_S), classes)
                raise UserInputError(
                    f"{_who(i, classes)} exited with {workers[i].exitcode} before the run started"
                )
            if time.time() > deadline:
                raise UserInputError(
                    f"{_who(i, classes)} was not connected {CONNECT_TIMEOUT_S:g} s after it "
                    "started: ended"
                )
    until = time.time() + seconds
    start.until.value = until
    start.go.set()
    return until


def _check_deadline(
    workers: list[Any], results: dict[int, ClientResult], classes: list[str], deadline: float
) -> None:
    if time.time() > deadline:
        i = next(i for i in range(len(workers)) if i not in results)
        raise UserInputError(
            f"{_who(i, classes)} was still running {HANG_GRACE_S:g} s after the run's end: ended"
        )


def run_clients(plan: ClientPlan, clients: int) -> list[dict[str, Any]]:
    """``clients`` drafter processes (:func:`child_context`) against ``plan.address``, their rows in
    client order; every process is ended and joined before this returns or raises."""
    context = child_context(__name__)
    out: Any = context.Queue()
    start = start_line(context)
    workers = [context.Process(target=client, args=(plan, i, out, start)) for i in range(clients)]
    try:
        for w in workers:  # a stop while they start ends those started
            with signals_deferred():  # a start cut short broke the child's read of its data
                w.start()
        until = start_together(start, out, workers, plan.classes, plan.seconds)
        rows = collect(out, workers, plan.classes, until + HANG_GRACE_S)
    except BaseException:  # the others would run on to ``until`` for nothing
        for w in workers:
            if w.is_alive():
                w.terminate()
        raise
    finally:
        for w in workers:
            if w.pid is not None:  # started
                w.join()
    return rows
