"""The endpoint's concurrency is explicit: with ``max_running`` 4 and ``max_queued`` 4, 12
streaming clients at once (their verifications held on the server until all have arrived)
get 4 generations running, 4 queued and 4 refused at once with a 429 and ``Retry-After``;
``/metrics`` shows it, ``/health`` and ``/v1/models`` answer meanwhile, and the 8 admitted
finish once the server goes on."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.admission import Concurrency
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _error, word_tokenizer

CLIENTS = 12
ADMITS = Concurrency(max_running=4, max_queued=4)


class HeldTarget(TransformersTarget):
    """The tiny target, its forward passes held until ``go`` is set."""

    go = threading.Event()

    def forward(self, items: Sequence[Any]) -> Any:
        assert self.go.wait(60), "never let go"
        return super().forward(items)


@pytest.fixture
def held(
    request: pytest.FixtureRequest, target_model: Any, draft_model: Any
) -> Iterator[ApiThread]:
    admits: Concurrency = getattr(request, "param", ADMITS)
    HeldTarget.go.clear()
    # the load-time probes would be held too: the masks and numerics are tested elsewhere
    server: ServerThread = start_server(
        HeldTarget(target_model, check_masks=False), host="127.0.0.1"
    )
    address = f"127.0.0.1:{server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24,
                      (RemoteVerifier(address, timeout_s=60.0),))  # fmt: skip
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS, concurrency=admits)),
                    "127.0.0.1").start()  # fmt: skip
    yield api
    HeldTarget.go.set()
    api.stop()
    server.stop(grace_s=0)


def _get(api: ApiThread, path: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(f"http://127.0.0.1:{api.port}{path}", timeout=5) as response:
        return response.status, response.read()


def _metrics(api: ApiThread) -> dict[str, float]:
    _, text = _get(api, "/metrics")
    rows = (line.split() for line in text.decode().splitlines() if not line.startswith("#"))
    return {name.removeprefix("edgespec_openai_"): float(value) for name, value in rows}


def _stream(
    api: ApiThread, index: int, source: str = "127.0.0.1", forwarded_for: str | None = None
) -> tuple[int, Any, str]:
    """A streamed completion sent from the address ``source`` (any 127.x.y.z is this host),
    saying it is forwarded for ``forwarded_for`` when given (``X-Forwarded-For``)."""
    body = {"model": MODEL, "prompt": f"w{index % 60 + 1} w2 w3", "max_tokens": 6,
            "stream": True}  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=120,
                                            source_address=(source, 0))  # fmt: skip
    try:
        headers = {"Content-Type": "application/json"}
        if forwarded_for is not None:
            headers["X-Forwarded-For"] = forwarded_for
        connection.request("POST", "/v1/completions", json.dumps(body), headers)
        response = connection.getresponse()
        return response.status, response.headers, response.read().decode()
    finally:
        connection.close()


def _wait_for(api: ApiThread, running: int, queued: int, refused: int) -> None:
    deadline = time.monotonic() + 60
    wanted = (running, queued, refused)
    while time.monotonic() < deadline:
        seen = _metrics(api)
        keys = ("requests_running", "requests_queued", "requests_refused_total")
        if tuple(seen[k] for k in keys) == wanted:
            return
        time.sleep(0.05)
    raise AssertionError(f"never {wanted} running, queued, refused: {_metrics(api)}")


def test_admits_queues_then_refuses_with_429(held: ApiThread) -> None:
    with ThreadPoolExecutor(CLIENTS) as pool:
        replies = [pool.submit(_stream, held, i) for i in range(CLIENTS)]
        _wait_for(held, running=4, queued=4, refused=CLIENTS - 8)
        # meanwhile the endpoint's own routes answer: no worker is needed for them
        assert _get(held, "/health")[0] == 200
        assert json.loads(_get(held, "/v1/models")[1])["data"][0]["id"] == MODEL
        HeldTarget.go.set()
        done = [f.result(timeout=120) for f in replies]
    refused = [reply for reply in done if reply[0] != 200]
    assert len(refused) == CLIENTS - 8
    for status, headers, text in refused:
        assert (status, headers["Retry-After"]) == (429, "1")
        error = json.loads(text)["error"]
        assert (error["type"], error["code"]) == ("rate_limit_error", "too_many_requests")
        assert "4 generations running and 4 queued" in error["message"]
    served = [text for status, _, text in done if status == 200]
    assert len(served) == 8
    assert all(text.endswith("data: [DONE]\n\n") for text in served)
    # a slot is released when its handler returns, just after the client read [DONE]
    _wait_for(held, running=0, queued=0, refused=CLIENTS - 8)
    assert _metrics(held)["requests_admitted_total"] == 8


def test_a_client_that_leaves_while_queued_gives_its_place_up(held: ApiThread) -> None:
    """Before, a queued request kept its place after its client left (a live request got
    429 meanwhile) and then started a generation nobody would read."""
    with ThreadPoolExecutor(4) as pool:
        replies = [pool.submit(_stream, held, i) for i in range(4)]
        _wait_for(held, running=4, queued=0, refused=0)
        leaving = []
        for index in range(2):
            connection = http.client.HTTPConnection("127.0.0.1", held.port, timeout=30)
            body = {"model": MODEL, "prompt": f"w{index + 1}", "max_tokens": 6}
            connection.request("POST", "/v1/completions", json.dumps(body),
                               {"Content-Type": "application/json"})  # fmt: skip
            leaving.append(connection)
        _wait_for(held, running=4, queued=2, refused=0)
        for connection in leaving:
            connection.close()
        _wait_for(held, running=4, queued=0, refused=0)  # their places given up
        HeldTarget.go.set()
        assert [f.result(timeout=120)[0] for f in replies] == [200] * 4
    _wait_for(held, running=0, queued=0, refused=0)
    assert _metrics(held)["requests_admitted_total"] == 4  # the two never started


@pytest.mark.parametrize("held", [Concurrency(4, 4, max_per_client=3)], indirect=True)
def test_one_client_is_capped_and_the_others_are_still_served(held: ApiThread) -> None:
    """A client (an address) with 3 requests in flight gets 429 for its next ones,
    and the worker and the queue it did not take stay for the others; before, one client
    could take every worker and the whole queue. A client is its peer's address whatever
    ``X-Forwarded-For`` it sends (uvicorn took the header's from a peer on 127.0.0.1: a
    local client named itself anew each request, past the cap)."""
    with ThreadPoolExecutor(7) as pool:
        greedy = [pool.submit(_stream, held, i, "127.0.0.1", f"10.0.0.{i}") for i in range(5)]
        _wait_for(held, running=3, queued=0, refused=2)
        refused_now = [f for f in greedy if f.done()]  # answered at once
        others = [pool.submit(_stream, held, i, "127.0.0.2") for i in range(2)]
        _wait_for(held, running=4, queued=1, refused=2)
        seen = _metrics(held)
        assert (seen["clients_in_flight"], seen["requests_refused_per_client_total"]) == (2, 2)
        HeldTarget.go.set()
        served = [f.result(timeout=120) for f in [*greedy, *others] if f not in refused_now]
    refused = [f.result() for f in refused_now]
    assert len(refused) == 2
    for status, headers, text in refused:
        assert (status, headers["Retry-After"]) == (429, "1")
        assert json.loads(text)["error"]["message"] == (
            "the endpoint is busy: client 127.0.0.1 has 3 requests in flight "
            "(--openai-max-per-client 3); retry after 1s"
        )
    assert [status for status, _, _ in served].count(200) == 5
    _wait_for(held, running=0, queued=0, refused=2)
    assert _metrics(held)["clients_in_flight"] == 0


@pytest.mark.parametrize(
    ("field", "value", "param"),
    [
        ("seed", 2**63, "seed"),
        ("edgespec", {"slo_class": "s" * 129}, "edgespec.slo_class"),
        ("edgespec", {"window": {"name": "static", "params": {"gamma": -3}}}, "edgespec.window"),
    ],
    ids=["seed", "slo_class", "window"],
)
def test_a_bad_request_is_400_even_when_every_place_is_taken(
    held: ApiThread, field: str, value: Any, param: str
) -> None:
    """These were found only once a worker took the request: a 429 under load (or a wait in
    the queue) for a request that could never run."""
    with ThreadPoolExecutor(8) as pool:
        replies = [pool.submit(_stream, held, i) for i in range(8)]
        try:
            _wait_for(held, running=4, queued=4, refused=0)
            status, error = _error(held, {"model": MODEL, "prompt": "w1", field: value})
            assert (status, error["param"]) == (400, param), error
            _wait_for(held, running=4, queued=4, refused=0)  # it took no place, nor a 429
        finally:
            HeldTarget.go.set()
        assert [f.result(timeout=120)[0] for f in replies] == [200] * 8


class SlowTokenizer:
    """The word tokenizer, its encoding taking a second and a half."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(1.5)
        return self._inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_tokenizing_a_prompt_leaves_the_event_loop_free(
    grpc_server: ServerThread, draft_model: Any
) -> None:
    """A long prompt's tokenizing (most of a second for 1 MiB) once ran on the event loop:
    /health and every other request waited it out."""
    from tests.runtime.openai_api.conftest import endpoint

    api = endpoint(f"127.0.0.1:{grpc_server.port}", draft_model, SlowTokenizer(word_tokenizer(64)))
    try:
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(_stream, api, 0)
            time.sleep(0.3)  # the request is being tokenized
            start = time.monotonic()
            assert _get(api, "/health")[0] == 200
            assert time.monotonic() - start < 0.8
            assert reply.result(timeout=60)[0] == 200
    finally:
        api.stop()


def test_a_request_counts_against_its_clients_cap_while_it_is_tokenized(
    grpc_server: ServerThread, draft_model: Any
) -> None:
    """The cap counts a request from its arrival: a client at its cap cannot wait in the
    tokenizer's line either (it was refused only once tokenized, after waiting its turn),
    and another address is served meanwhile."""
    address = f"127.0.0.1:{grpc_server.port}"
    setup = EdgeSetup(
        from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"}),
        draft_model, SlowTokenizer(word_tokenizer(64)), 64, 24,
        (RemoteVerifier(address, timeout_s=5.0),),
    )  # fmt: skip
    admits = Concurrency(4, 4, max_per_client=1)
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS, concurrency=admits)),
                    "127.0.0.1").start()  # fmt: skip
    try:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(_stream, api, 0)
            time.sleep(0.3)  # being tokenized (a second and a half)
            start = time.monotonic()
            status, _, text = _stream(api, 1)
            assert time.monotonic() - start < 1.5  # at once, not after the tokenizer (2.7 s)
            assert (status, json.loads(text)["error"]["message"]) == (
                429,
                "the endpoint is busy: client 127.0.0.1 has 1 requests in flight "
                "(--openai-max-per-client 1); retry after 1s",
            )
            tokenized = urllib.request.Request(
                f"http://127.0.0.1:{api.port}/tokenize", method="POST",
                data=json.dumps({"model": MODEL, "prompt": "w1"}).encode(),
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
            with pytest.raises(urllib.error.HTTPError) as refused:  # the tokenizer routes too
                urllib.request.urlopen(tokenized, timeout=10)
            assert refused.value.code == 429
            assert "client 127.0.0.1 has 1 requests in flight" in refused.value.read().decode()
            other = pool.submit(_stream, api, 2, "127.0.0.2")
            assert (first.result(timeout=60)[0], other.result(timeout=60)[0]) == (200, 200)
        assert _stream(api, 3)[0] == 200  # counted out once answered
        assert _metrics(api)["clients_in_flight"] == 0
    finally:
        api.stop()
