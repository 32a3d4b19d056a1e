"""``/health`` and ``/ready``: what the endpoint last saw of each verification server
(:mod:`.server_watch`), refreshed by short probes when no real call is recent.

``/health`` is liveness: 200 whenever the process answers, its body saying whether a server
is reachable (``status`` ``ok``, else ``no_server_reachable``), the requests running and
queued, and each server's state since when. ``/ready`` is readiness, the same body with 503
while no server is reachable: a load balancer or a Kubernetes readiness probe sends no
requests then, which would each wait ``--retry-timeout-s`` and fail (a liveness probe on it
would restart an endpoint that only waits for its server).

A probe is one ``Stats`` call (the server authenticates it, unlike ``Health``: a refused
token shows) of ``PROBE_TIMEOUT_S``, never on the event loop: on a thread of the probes' own
pool, one per server, not the loop's default executor, which tokenizes prompts (probes of
hung servers would hold its threads, as few as 6 on a 2-core device, 2 s in every 5). A server is
probed only when nothing told of it for ``PROBE_INTERVAL_S`` (requests' calls keep a busy
one fresh), at most one probe of it in flight and one started per ``PROBE_INTERVAL_S``,
however many health checks arrive; a check waits at most ``PROBE_WAIT_S`` for the probes it
finds, then answers with what is known.

``/metrics`` says the same per server (:func:`server_metrics`), refreshed alike. A request
that finds every server unreachable for longer than ``--retry-timeout-s``, as told within
``REFUSAL_FRESH_S``, is answered 503 at once (:meth:`Health.refuse_if_hopeless`: a hung
server's probe within its deadline, ``HOPELESS_WAIT_S``): waiting that long could not help
it; one at an outage's start waits (a server restarting). A
server told unreachable within ``PROBE_INTERVAL_S`` is not asked by routing
(:meth:`Health.known_down`)."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from fastapi.responses import JSONResponse

from edgespec.runtime.errors import RequestError
from edgespec.runtime.openai_api.admission import Admission, metric_family
from edgespec.runtime.openai_api.errors import RETRY_AFTER_S
from edgespec.runtime.openai_api.server_watch import REACHABLE, STATES, Seen, ServerWatch

LOG = logging.getLogger(__name__)

PROBE_INTERVAL_S = 5.0
"""The least time between two probes of one server, and how old what a server's last call
told may be before a health check probes it."""

PROBE_TIMEOUT_S = 2.0
"""A probe's deadline: a server silent that long is unreachable."""

PROBE_WAIT_S = 0.5
"""The most a health check waits for probes in flight (a Kubernetes probe's shortest
timeout is 1 s)."""

REFUSAL_FRESH_S = float(RETRY_AFTER_S)
"""How old what a server told may be for a request to be refused on it, and the least time
between two probes a refusal starts: the 503's ``Retry-After`` (1 s), so a client retrying
after it is judged on a newer word. On ``PROBE_INTERVAL_S``'s a restarted server's clients
were refused for up to 5 s after it listened."""

HOPELESS_WAIT_S = PROBE_TIMEOUT_S + PROBE_WAIT_S
"""The most a request that finds every server long unreachable waits for their probes: a
hung server's probe fails only at its deadline (and ``PROBE_WAIT_S`` more to land; a
request that waited only ``PROBE_WAIT_S`` saw none land, and waited out the retry window)."""


def _utc(unix_s: float) -> str:
    moment = datetime.datetime.fromtimestamp(unix_s, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


SERVER_UP = ("server_up", "gauge", "1 while the verification server answers the endpoint "
             "(its /health state reachable), else 0")  # fmt: skip
SERVER_STATE = ("server_state", "gauge", "the verification server's /health state: a series "
                "per state, 1 for the current one")  # fmt: skip
"""Per server, labelled ``server`` (its address): ``up`` to alert on, ``state`` to tell an
outage from a refused token (Prometheus' enum: every state a series always there, not one
series whose changing label ends it and starts another)."""


def _label(text: str) -> str:
    """``text`` as a Prometheus label value (backslash, double quote and newline escaped)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def server_metrics(addresses: tuple[str, ...], seen: tuple[Seen, ...]) -> str:
    """Each server's ``up`` and ``state`` gauges in Prometheus' text format."""
    up: list[tuple[str, int]] = []
    states: list[tuple[str, int]] = []
    for address, one in zip(addresses, seen, strict=True):
        server = f'server="{_label(address)}"'
        up.append((f"{{{server}}}", int(one.state == REACHABLE)))
        states += [(f'{{{server},state="{state}"}}', int(one.state == state)) for state in STATES]
    return metric_family(*SERVER_UP, up) + metric_family(*SERVER_STATE, states)


def server_entry(address: str, seen: Seen) -> dict[str, Any]:
    """One server in a health body: its state since when, when a call or probe last told of
    it (``null``: never; both UTC, to the second: a GET and a HEAD alike), the failure
    behind a state other than ``reachable`` (else ``null``)."""
    told = None if seen.told_unix_s is None else _utc(seen.told_unix_s)
    return {"address": address, "state": seen.state, "since": _utc(seen.since_unix_s),
            "checked": told, "error": seen.error}  # fmt: skip


class Health:
    """The answers of ``/health`` and ``/ready`` over ``watch``, with ``admission``'s counts,
    on ``clock`` (the watch's); its servers' ``clients`` watched (:attr:`clients`, for the
    requests and the probes alike)."""

    def __init__(
        self,
        watch: ServerWatch,
        clients: tuple[Any, ...],
        admission: Admission,
        clock: Callable[[], float],
    ) -> None:
        self.watch = watch
        self.clients = watch.watched(clients)
        self._admission = admission
        self._clock = clock
        self._flying: dict[int, asyncio.Future[Any]] = {}  # touched on the event loop only
        # at most one probe per server runs: one thread each, a probe never waits for one
        self._probes = ThreadPoolExecutor(max(1, len(clients)), "edgespec-probe")
        self._started_s: dict[int, float] = {}

    async def answer(self, readiness: bool) -> JSONResponse:
        """The body, once fresh probes landed (or ``PROBE_WAIT_S`` passed); ``readiness``:
        503 while no server is reachable."""
        await self._refresh()
        ready = self.watch.ready()
        servers = [server_entry(address, seen)
                   for address, seen in zip(self.watch.addresses, self.watch.seen(),
                                            strict=True)]  # fmt: skip
        body = {"status": "ok" if ready else "no_server_reachable", "ready": ready,
                "running": self._admission.running, "queued": self._admission.queued,
                "servers": servers}  # fmt: skip
        return JSONResponse(body, status_code=503 if readiness and not ready else 200)

    async def metrics(self) -> str:
        """:func:`server_metrics`, once fresh probes landed (or ``PROBE_WAIT_S`` passed)."""
        await self._refresh()
        return server_metrics(self.watch.addresses, self.watch.seen())

    def known_down(self) -> frozenset[int]:
        """The servers a new request's routing does not ask: told unreachable less than
        ``PROBE_INTERVAL_S`` ago (:meth:`.ServerWatch.known_down`). Past that routing asks
        one again, and a health check probes it: a server back is admitted within
        ``PROBE_INTERVAL_S`` of its last failure, at once when a call or probe answers."""
        return self.watch.known_down(PROBE_INTERVAL_S)

    async def refuse_if_hopeless(self, retry_timeout_s: float) -> None:
        """Raise, for a request about to wait up to ``retry_timeout_s`` for a server, the 503
        it would get then, when every server has been unreachable for longer (each as told
        within ``REFUSAL_FRESH_S``: one told of earlier is probed first, waited for up to
        ``HOPELESS_WAIT_S``, a hung one's probe failing at its deadline; one still unknown,
        the request waits)."""
        if self.watch.unreachable_for_s() <= retry_timeout_s:
            return  # a server in another state, or an outage younger than the wait
        await self._refresh(HOPELESS_WAIT_S, interval_s=REFUSAL_FRESH_S)
        down_s = self.watch.unreachable_for_s(fresh_s=REFUSAL_FRESH_S)
        if down_s > retry_timeout_s:
            raise self.watch.unreachable_error(down_s, retry_timeout_s)

    def _due(self, index: int, now_s: float, interval_s: float) -> bool:
        """Whether server ``index`` is to be probed now: none of it in flight, and neither
        a probe started nor a word told within ``interval_s``."""
        if index in self._flying:
            return False
        last_s = [self._started_s.get(index), self.watch.seen()[index].told_s]
        return all(s is None or now_s - s >= interval_s for s in last_s)

    async def _refresh(
        self, wait_s: float = PROBE_WAIT_S, interval_s: float = PROBE_INTERVAL_S
    ) -> None:
        """Start the probes due (:meth:`_due`); wait up to ``wait_s`` for those in flight to
        land."""
        loop = asyncio.get_running_loop()
        now_s = self._clock()
        for index, client in enumerate(self.clients):
            if self._due(index, now_s, interval_s):
                self._started_s[index] = now_s
                probe = loop.run_in_executor(self._probes, client.stats, PROBE_TIMEOUT_S)
                self._flying[index] = probe
                probe.add_done_callback(partial(self._landed, index))
        if self._flying:
            await asyncio.wait(set(self._flying.values()), timeout=wait_s)

    def _landed(self, index: int, probe: asyncio.Future[Any]) -> None:
        """A probe of server ``index`` ended (its outcome told to the watch by the client);
        one that failed other than a server's refusal is the endpoint's bug, logged."""
        del self._flying[index]
        failure = None if probe.cancelled() else probe.exception()
        if failure is not None and not isinstance(failure, RequestError):
            LOG.error("probing the verification server %s failed",
                      self.watch.addresses[index], exc_info=failure)  # fmt: skip
