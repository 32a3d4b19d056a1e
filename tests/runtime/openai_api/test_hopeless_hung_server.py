"""A request that finds its one verification server unreachable for longer than
``--retry-timeout-s`` is answered 503 at once when that server is hung (stopped with
SIGSTOP: it takes connections and answers nothing), as when it is down: it waited for the
probe only ``PROBE_WAIT_S``, but a hung server's probe fails only at its 2 s deadline, so
the request found nothing fresh and waited out the whole retry timeout (32 s in the
operator's walk) for the same 503. The endpoint's clock is the test's, its waits real."""

from __future__ import annotations

import time
from typing import Any

from edgespec.runtime.openai_api.health import HOPELESS_WAIT_S, PROBE_TIMEOUT_S
from tests.runtime.hung_server import hung_server
from tests.runtime.openai_api.conftest import _post
from tests.runtime.openai_api.test_server_health import BODY, Clock, _endpoint, get

RETRY_TIMEOUT_S = 6.0
"""The endpoint's retry timeout here: a request that waits it out shows."""
HOPELESS = (
    "the verification server is unreachable: it has not answered for 31.0 s, longer than "
    "--retry-timeout-s (6 s): the request did not wait (see /health); retry after 1s"
)


def _until_unreachable(api: Any) -> None:
    """``/ready`` until the probe it started (at the clock's 100) failed at its deadline."""
    deadline = time.monotonic() + 10 * PROBE_TIMEOUT_S
    while time.monotonic() < deadline:
        status, body = get(api)
        if body["servers"][0]["state"] == "unreachable":
            return
    raise AssertionError(f"the hung server's probe did not fail: {status} {body}")


def test_a_hung_server_down_longer_than_the_retry_timeout_is_a_503_within_a_probe(
    draft_model: Any,
) -> None:
    clock = Clock()
    with hung_server(health_hangs=False) as (address, calls):
        api, _ = _endpoint([address], draft_model, clock, retry_timeout_s=RETRY_TIMEOUT_S,
                           request_timeout_s=RETRY_TIMEOUT_S)  # fmt: skip
        try:
            _until_unreachable(api)  # unreachable since 100, as a probe told
            clock.now_s = 131.0  # what it told is old: probed again, and hangs again
            start = time.monotonic()
            status, reply, headers = _post(api, "/v1/completions", BODY)
            took_s = time.monotonic() - start
        finally:
            api.stop()
    assert (status, headers["Retry-After"], reply["error"]["message"]) == (503, "1", HOPELESS)
    assert calls == ["Stats", "Stats"]  # the probes: the request opened nothing
    assert PROBE_TIMEOUT_S - 0.1 < took_s < HOPELESS_WAIT_S  # was RETRY_TIMEOUT_S and more
