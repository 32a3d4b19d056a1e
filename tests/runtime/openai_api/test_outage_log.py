"""An outage of the verification server is two lines in the endpoint's log, its start (the
first 503 answered) and its end (a server answering again: how long there was none, how
many requests were answered 503); a server that comes and goes at line rate has at most one
outage logged per 10 s. The endpoint answered those 503s and logged nothing.

Every 503 ``unavailable`` is counted in exactly one line. They were not: a server flipping
up and down every 0.7 s got its clients 1266 such 503s, 555 of them counted. The 503s of an
outage not logged were counted nowhere (the next line said only how many outages were
not), and a 503 answered just after a server answered again (its request waited through
the outage) opened an outage of its own, "no server reachable for 0.0 s", most often not
logged either."""

from __future__ import annotations

import datetime
import json
import logging
import re
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.openai_api import outages
from edgespec.runtime.openai_api.errors import from_request_error
from edgespec.runtime.openai_api.outages import OutageLog
from edgespec.runtime.openai_api.server_watch import ServerWatch
from tests.runtime.conftest import start_server
from tests.runtime.openai_api import test_server_health
from tests.runtime.openai_api.conftest import MODEL, _post, free_port
from tests.runtime.openai_api.test_server_health import (
    BODY,
    WALL_S,
    Clock,
    Counting,
    _endpoint,
    get,
    until_ready,
)

START = ("the OpenAI-compatible endpoint answered a request 503: {message}; no verification "
         "server has been reachable for {down_s} s (one line when one answers again)")  # fmt: skip
END = ("the verification server {address} answers again: the endpoint had none reachable for "
       "{down_s} s and answered {num} 503 meanwhile")  # fmt: skip
UNTOLD = "since its last outage line it answered {num} 503 that no line counted"
COUNTED = re.compile(r"answered (\d+) requests? 503")
"""How many 503s a line counts (a start line's own is counted in its end line)."""


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == outages.__name__]


def test_an_outage_is_logged_as_it_starts_and_as_it_ends(
    target: TransformersTarget, draft_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    server = start_server(target, host="127.0.0.1", port=port)
    clock = Clock()
    api, _ = _endpoint([address], draft_model, clock, retry_timeout_s=0.5)
    try:
        assert get(api)[0] == 200
        server.stop(grace_s=0)
        clock.now_s = 110.0
        assert get(api)[0] == 503  # a probe: unreachable since 110
        clock.now_s = 130.0
        with caplog.at_level(logging.WARNING, logger=outages.__name__):
            replies = [_post(api, "/v1/completions", BODY) for _ in range(3)]
            server = start_server(target, host="127.0.0.1", port=port)
            (seen,) = until_ready(api, clock)["servers"]
    finally:
        api.stop()
        server.stop(grace_s=0)
    assert [status for status, _, _ in replies] == [503] * 3
    since = datetime.datetime.fromisoformat(seen["since"].replace("Z", "+00:00"))
    back_s = since.timestamp() - WALL_S  # the endpoint's clock when the server answered
    assert _logged(caplog) == [
        START.format(message=replies[0][1]["error"]["message"], down_s="20.0"),
        END.format(address=address, down_s=f"{back_s - 110:.1f}", num="3 requests"),
    ]


def test_outages_at_line_rate_log_one_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    log = OutageLog(lambda: now[0], interval_s=10.0)
    with caplog.at_level(logging.WARNING, logger=outages.__name__):
        log.refused("m1", down_since_s=98.0)
        now[0] = 101.0
        log.refused("m2", down_since_s=98.0)  # the same outage: counted
        log.answered("a:1", now_s=104.0)
        now[0] = 105.0
        log.refused("m3", down_since_s=105.0)  # within 10 s of the last line: not logged
        log.answered("a:1", now_s=106.0)  # nor its end
        log.answered("a:1", now_s=107.0)  # no outage open: nothing
        now[0] = 110.0
        log.refused("m4", down_since_s=109.0)
        log.answered("a:1", now_s=111.5)
    assert _logged(caplog) == [
        START.format(message="m1", down_s="2.0"),
        END.format(address="a:1", down_s="6.0", num="2 requests"),
        START.format(message="m4", down_s="1.0")
        + "; "
        + UNTOLD.format(num="1 request")
        + " (1 outage not logged)",
        END.format(address="a:1", down_s="2.5", num="1 request"),
    ]


DOWN = RequestError(ErrorCode.UNAVAILABLE, "failed to connect to all addresses")
REFUSED = from_request_error(DOWN)
"""A request's 503 once its server was unreachable for --retry-timeout-s."""


def test_every_503_is_counted_in_exactly_one_line(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    watch = ServerWatch(("a:1",), lambda: now[0], answered=frozenset({"a:1"}))
    hopeless = watch.unreachable_error(40.0, 30.0)  # a 503 at once: none for long

    def at(now_s: float, *steps: str) -> None:
        now[0] = now_s
        for step in steps:  # down: a call failed; up: one answered; 503: a request's
            if step == "503":
                watch.note(REFUSED)
            else:
                watch.tell(0, DOWN if step == "down" else None)

    with caplog.at_level(logging.WARNING, logger=outages.__name__):
        at(100.0, "down", "503", "503")  # an outage: logged
        at(101.0, "up", "503")  # over; a request that waited through it answered 503 after
        at(102.0, "down", "503", "503", "503")  # within 10 s of the last line: not logged
        at(103.0, "up")
        at(104.0, "down", "503")
        watch.note(hopeless)  # the 503 at once of a request finding none for long
        at(105.0, "up")
        at(111.0, "down", "503")  # due: logged, saying what no line counted
        at(112.0, "503", "up")
        at(113.0, "down", "503", "503")  # not logged
        at(114.0, "up")
        at(120.0, "up")  # within 10 s of the last line: nothing yet
        at(121.0, "up")  # due: what no line counted
        at(122.0, "up")  # nothing more to say
    lines = _logged(caplog)
    assert lines == [
        START.format(message=REFUSED.message, down_s="0.0"),
        END.format(address="a:1", down_s="1.0", num="2 requests"),
        START.format(message=REFUSED.message, down_s="0.0")
        + "; "
        + UNTOLD.format(num="6 requests")
        + " (2 outages not logged)",
        END.format(address="a:1", down_s="1.0", num="2 requests"),
        "the OpenAI-compatible endpoint: "
        + UNTOLD.format(num="2 requests")
        + " (1 outage not logged)",
    ]
    num_refused = 12  # every "503" above, and the one at once
    assert sum(int(m[1]) for line in lines for m in COUNTED.finditer(line)) == num_refused


def test_a_stream_ended_by_an_outage_is_logged_as_what_its_client_got(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Its client got 200, then an ``unavailable`` error event and ``[DONE]``: the log said
    "answered a request 503" and counted it "answered 1 request 503 meanwhile"."""
    now = [100.0]
    watch = ServerWatch(("a:1",), lambda: now[0], answered=frozenset({"a:1"}))
    ended = "ended a stream (answered 200 already) with an unavailable error"
    with caplog.at_level(logging.WARNING, logger=outages.__name__):
        watch.tell(0, DOWN)
        now[0] = 102.0
        watch.note(REFUSED, streamed=True)  # opens the outage
        watch.note(REFUSED)
        watch.tell(0, None)
        now[0] = 104.0  # within 10 s of the last line: not logged, then counted
        watch.tell(0, DOWN)
        watch.note(REFUSED, streamed=True)
        watch.note(REFUSED, streamed=True)
        watch.tell(0, None)
        now[0] = 120.0
        watch.tell(0, DOWN)
        watch.note(REFUSED, streamed=True)
        watch.tell(0, None)
    assert _logged(caplog) == [
        f"the OpenAI-compatible endpoint {ended}: {REFUSED.message}; no verification server "
        "has been reachable for 2.0 s (one line when one answers again)",
        "the verification server a:1 answers again: the endpoint had none reachable for 2.0 s "
        f"and answered 1 request 503 and {ended.replace('a stream', '1 stream')} meanwhile",
        f"the OpenAI-compatible endpoint {ended}: {REFUSED.message}; no verification server "
        "has been reachable for 0.0 s (one line when one answers again); since its last outage "
        "line it ended 2 streams (answered 200 already) with an unavailable error that no line "
        "counted (1 outage not logged)",
        "the verification server a:1 answers again: the endpoint had none reachable for 0.0 s "
        f"and {ended.replace('a stream', '1 stream')} meanwhile",
    ]


class LostAfterARound(Counting):
    """A server's client whose server is lost once it has verified one round: every call
    after that fails ``UNAVAILABLE``, as a server gone does."""

    def __init__(self, address: str, auth_token: str | None) -> None:
        super().__init__(address, auth_token)
        self.lost = False

    def _check(self) -> None:
        if self.lost:
            raise DOWN

    def open_within(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return super().open_within(*args, **kwargs)

    def verify_within(self, call: Any, timeout_s: float, cancel: Any = None) -> Any:  # verify's
        self._check()
        self.lost = True
        return super().verify_within(call, timeout_s, cancel)

    def stats(self, timeout_s: float | None = None) -> Any:
        self._check()
        return super().stats(timeout_s)

    def close(self, session_id: str) -> None:
        self._check()
        super().close(session_id)


def stream_after_a_round(
    target: TransformersTarget, draft_model: Any, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture, client: type[LostAfterARound], logger: str,
) -> tuple[int, list[str]]:  # fmt: skip
    """A streamed completion through an endpoint whose server's client is ``client`` (it
    fails once it has verified a round), ``logger``'s warnings captured: the status and the
    stream's events."""
    import urllib.request

    server = start_server(target, host="127.0.0.1")
    monkeypatch.setattr(test_server_health, "Counting", client)
    api, _ = _endpoint([f"127.0.0.1:{server.port}"], draft_model, Clock(), retry_timeout_s=0.3)
    body = json.dumps({"model": MODEL, "prompt": "w5 w6", "max_tokens": 32, "stream": True})
    url = f"http://127.0.0.1:{api.port}/v1/completions"
    request = urllib.request.Request(url, body.encode(), {"Content-Type": "application/json"})
    try:
        with (
            caplog.at_level(logging.WARNING, logger=logger),
            urllib.request.urlopen(request, timeout=60) as reply,
        ):
            return reply.status, reply.read().decode().split("\n\n")
    finally:
        api.stop()
        server.stop(grace_s=0)


def test_a_stream_its_server_left_after_its_200_is_logged_as_what_its_client_got(
    target: TransformersTarget, draft_model: Any, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    status, events = stream_after_a_round(
        target, draft_model, monkeypatch, caplog, LostAfterARound, outages.__name__
    )
    error = json.loads(events[-3].removeprefix("data: "))["error"]
    assert (status, error["code"], events[-2:]) == (200, "unavailable", ["data: [DONE]", ""])
    assert _logged(caplog) == [  # was "answered a request 503: ..."
        "the OpenAI-compatible endpoint ended a stream (answered 200 already) with an "
        f"unavailable error: {error['message']}; no verification server has been reachable "
        "for 0.0 s (one line when one answers again)"  # the endpoint's clock stood still
    ]


def test_a_count_before_any_outage_line_is_since_the_endpoint_started(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 503 answered as a server answered again, before any outage was logged, was said
    "since its last outage line" of a log that had none."""
    now = [100.0]
    log = OutageLog(lambda: now[0], interval_s=10.0)
    with caplog.at_level(logging.WARNING, logger=outages.__name__):
        log.refused("m1", down_since_s=98.0, reachable=True)  # its request waited through one
        now[0] = 120.0
        log.refused("m2", down_since_s=118.0, reachable=True)  # one line logged before it now
    endpoint = "the OpenAI-compatible endpoint: "
    assert _logged(caplog) == [
        endpoint + "since it started it answered 1 request 503 that no line counted",
        endpoint + UNTOLD.format(num="1 request"),
    ]
