"""``edgespec draft --serve-openai`` stopped as systemd, ``docker stop`` or a shell stop it,
in a process of its own drafting with the tiny target, each round slowed by an emulated
200 ms link.

SIGTERM killed it at once: a stream was cut without an error event or ``[DONE]``, and its
session stayed open on the server (a restarted endpoint then got 429s for the token's
quota). It stops as Ctrl-C does: the requests in flight finish, one line, exit 143. A second
Ctrl-C printed a threading traceback and ``terminate called without an active exception``
(exit -6, the session left open); it cancels the generations: a stream ends with an error
event and ``[DONE]``, a whole completion is a 503, every session is closed, exit 130."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.processes import Command, open_sessions

STOPPING = "the endpoint is stopping: this request was cancelled before it finished"


class Endpoint:
    """The endpoint's process and its port."""

    def __init__(self, command: Command, port: int) -> None:
        self.command, self.port = command, port

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as reply:
            return json.loads(reply.read())


@pytest.fixture
def endpoint(server: ServerThread, model_dir: Path, tmp_path: Path) -> Iterator[Endpoint]:
    args = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", str(model_dir),
            "--gamma", "4", "--serve-openai", "127.0.0.1:0", "--link-rtt-ms", "200"]  # fmt: skip
    command = Command(args, tmp_path / "stderr")
    try:
        port = command.wait_for(r"OpenAI-compatible endpoint on http://127\.0\.0\.1:(\d+)/v1")
        yield Endpoint(command, int(port[1]))
    finally:
        command.kill()


class Client(threading.Thread):
    """One completion posted to the endpoint: its status, and its events (a stream) or its
    body; ``began`` is set once the first event came (or the reply ended)."""

    def __init__(self, endpoint: Endpoint, max_tokens: int, stream: bool) -> None:
        super().__init__(daemon=True)
        model = endpoint.get("/v1/models")["data"][0]["id"]
        body = {"model": model, "prompt": "w5 w6 w7", "max_tokens": max_tokens, "stream": stream}
        self.request = urllib.request.Request(
            f"http://127.0.0.1:{endpoint.port}/v1/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        self.began = threading.Event()
        self.status: int | None = None
        self.events: list[str] = []
        self.body: Any = None
        self.start()

    def run(self) -> None:
        try:
            with urllib.request.urlopen(self.request, timeout=120) as reply:
                self.status = reply.status
                for raw in reply:
                    if line := raw.decode().strip():
                        self.events.append(line)
                        self.began.set()
        except urllib.error.HTTPError as exc:
            self.status, self.body = exc.code, json.loads(exc.read())
        finally:
            self.began.set()

    def ended(self) -> Client:
        self.join(60)
        assert not self.is_alive()
        return self


def _running(endpoint: Endpoint, num: int) -> None:
    """Wait until ``num`` generations run."""
    deadline = time.monotonic() + 60
    while endpoint.get("/health")["running"] < num:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_sigterm_finishes_the_stream_in_flight_then_exits_143(
    endpoint: Endpoint, server: ServerThread
) -> None:
    stream = Client(endpoint, max_tokens=60, stream=True)  # 12 rounds: about 3 s
    assert stream.began.wait(60) and stream.events
    endpoint.command.process.send_signal(signal.SIGTERM)
    assert endpoint.command.stopped(60) == 143
    events = stream.ended().events
    assert stream.status == 200 and events[-1] == "data: [DONE]"
    last = json.loads(events[-2].removeprefix("data: "))
    assert last["choices"][0]["finish_reason"] == "length"
    lines = endpoint.command.lines
    assert lines[-2:] == [
        "edgespec draft: stopping: finishing 1 request in flight for at most 30 s (Ctrl-C "
        "again cancels it)",
        "edgespec draft: terminated",
    ]
    assert open_sessions(f"127.0.0.1:{server.port}") == 0


def test_a_second_ctrl_c_cancels_what_runs_and_exits_130(
    endpoint: Endpoint, server: ServerThread
) -> None:
    stream = Client(endpoint, max_tokens=1000, stream=True)  # about 40 s each
    whole = Client(endpoint, max_tokens=1000, stream=False)
    assert stream.began.wait(60)
    _running(endpoint, 2)
    endpoint.command.process.send_signal(signal.SIGINT)
    endpoint.command.wait_for("stopping: finishing 2 requests")
    again = time.monotonic()
    endpoint.command.process.send_signal(signal.SIGINT)
    assert endpoint.command.stopped(30) == 130
    assert time.monotonic() - again < 5.0  # a round (200 ms) and the sessions' closes
    assert stream.ended().status == 200 and stream.events[-1] == "data: [DONE]"
    error = json.loads(stream.events[-2].removeprefix("data: "))["error"]
    assert (error["message"], error["code"]) == (STOPPING, "endpoint_stopping")
    assert whole.ended().status == 503
    assert whole.body["error"] == {"message": STOPPING, "type": "server_error", "param": None,
                                   "code": "endpoint_stopping"}  # fmt: skip
    lines = endpoint.command.lines
    assert lines[-3:] == [
        "edgespec draft: stopping: finishing 2 requests in flight for at most 30 s (Ctrl-C "
        "again cancels them)",
        "edgespec draft: cancelling 2 requests still in flight",
        "edgespec draft: interrupted",
    ]
    assert not any("Traceback" in line or "terminate called" in line for line in lines)
    assert open_sessions(f"127.0.0.1:{server.port}") == 0
