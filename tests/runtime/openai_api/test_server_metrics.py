"""``/metrics`` says each verification server's state as ``/health`` does: a gauge
``edgespec_openai_server_up`` (1 reachable, else 0) to alert on, and
``edgespec_openai_server_state``, one series per state (Prometheus' enum), to tell an outage
from a refused token. ``/metrics`` had the endpoint's queues alone: an outage showed only as
requests that took 30 s. Real loopback servers; the endpoint's clocks are the test's."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.openai_api.health import server_metrics
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.openai_api.server_watch import Seen
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import free_port
from tests.runtime.openai_api.test_server_health import Clock, _endpoint

UP = (
    "# HELP edgespec_openai_server_up 1 while the verification server answers the endpoint "
    "(its /health state reachable), else 0\n# TYPE edgespec_openai_server_up gauge\n"
)
STATE = (
    "# HELP edgespec_openai_server_state the verification server's /health state: a series "
    "per state, 1 for the current one\n# TYPE edgespec_openai_server_state gauge\n"
)
STATES = ("reachable", "unreachable", "refusing_token", "unknown")


def _state(address: str, current: str) -> str:
    return "".join(
        f'edgespec_openai_server_state{{server="{address}",state="{state}"}} '
        f"{int(state == current)}\n"
        for state in STATES
    )


def _metrics(api: ApiThread) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{api.port}/metrics", timeout=30) as reply:
        return str(reply.read().decode())


def test_metrics_say_each_servers_state(target: TransformersTarget, draft_model: Any) -> None:
    """A server that takes the endpoint's token, one that refuses it, and none at a port."""
    servers = [start_server(target, host="127.0.0.1"),
               start_server(target, host="127.0.0.1", auth_tokens=["another"])]  # fmt: skip
    up, refusing = (f"127.0.0.1:{server.port}" for server in servers)
    down = f"127.0.0.1:{free_port()}"
    api, _ = _endpoint([up, refusing, down], draft_model, Clock(), token="tok", answered=(up,))
    try:
        deadline = time.monotonic() + 30  # a probe that took over its wait (a loaded machine)
        while 'state="unknown"} 1' in (text := _metrics(api)) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        api.stop()
        for server in servers:
            server.stop(grace_s=0)
    assert text[text.index("# HELP edgespec_openai_server_up") :] == (
        UP
        + f'edgespec_openai_server_up{{server="{up}"}} 1\n'
        + f'edgespec_openai_server_up{{server="{refusing}"}} 0\n'
        + f'edgespec_openai_server_up{{server="{down}"}} 0\n'
        + STATE
        + _state(up, "reachable")
        + _state(refusing, "refusing_token")
        + _state(down, "unreachable")
    )


def test_a_server_not_asked_yet_is_unknown_and_labels_are_escaped() -> None:
    odd = 'h"o\\st\n:1'
    text = server_metrics((odd,), (Seen("unknown", 0.0, 0.0),))
    assert text == (
        UP + 'edgespec_openai_server_up{server="h\\"o\\\\st\\n:1"} 0\n' + STATE
        + _state('h\\"o\\\\st\\n:1', "unknown")
    )  # fmt: skip
