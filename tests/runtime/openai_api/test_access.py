"""Who may call the endpoint: ``--openai-api-key`` (every route but /health, /ready and
/metrics needs ``Authorization: Bearer KEY``, a 401 in OpenAI's shape before the body is
read) and ``--openai-allowed-origins`` (CORS: a browser's preflight answered for the
origins given, none by default). Before, the endpoint took any client that reached it and
answered no browser's preflight."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.access import Access, key_refusal, origin_list, unguarded_warning
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.openai_api.conftest import LIMITS, MODEL, openai, word_tokenizer

KEY = "k-7f3a"
PAGE = "http://localhost:3000"


def _endpoint(grpc_server: ServerThread, draft_model: Any, access: Access) -> ApiThread:
    address = f"127.0.0.1:{grpc_server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24,
                      (RemoteVerifier(address, timeout_s=5.0),))  # fmt: skip
    app = build_app(setup, ApiConfig(MODEL, limits=LIMITS, access=access))
    return ApiThread(app, "127.0.0.1").start()


@pytest.fixture(scope="module")
def keyed(grpc_server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    running = _endpoint(grpc_server, draft_model, Access(KEY, (PAGE,)))
    yield running
    running.stop()


def _call(
    api: ApiThread,
    path: str,
    method: str = "GET",
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes, Any]:
    """The status, body and headers of one request."""
    request = urllib.request.Request(f"http://127.0.0.1:{api.port}{path}", data=data,
                                     headers=headers or {}, method=method)  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def test_the_key_opens_every_route_and_a_wrong_one_is_a_401(keyed: ApiThread) -> None:
    base = f"http://127.0.0.1:{keyed.port}/v1"
    client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=60)
    done = client.completions.create(model=MODEL, prompt="w1 w2 w3", max_tokens=3)
    assert done.usage is not None and done.usage.completion_tokens == 3
    wrong = openai.OpenAI(base_url=base, api_key="k-7f3b", max_retries=0, timeout=60)
    with pytest.raises(openai.AuthenticationError) as info:
        wrong.models.list()
    assert info.value.status_code == 401
    assert info.value.body == {"message": "incorrect API key", "type": "invalid_request_error",
                               "param": None, "code": "invalid_api_key"}  # fmt: skip


def test_without_the_header_a_401_says_what_to_send_before_the_body_is_read(
    keyed: ApiThread,
) -> None:
    too_big = b"{" + b" " * (2 * LIMITS.max_body_bytes) + b"}"  # a 413 once read
    status, body, headers = _call(keyed, "/v1/completions", "POST", too_big,
                                  {"Content-Type": "application/json"})  # fmt: skip
    assert (status, headers["WWW-Authenticate"]) == (401, "Bearer")
    assert json.loads(body)["error"]["message"] == (
        "this endpoint needs an API key: send the header 'Authorization: Bearer KEY' with the "
        "key its --openai-api-key gives"
    )
    status, body, _ = _call(keyed, "/tokenize", "POST", b"{}", {"Authorization": f"Basic {KEY}"})
    assert status == 401
    assert json.loads(body)["error"]["message"] == (
        "the Authorization header must be 'Bearer KEY', got the scheme \"Basic\""
    )


def test_the_probes_and_metrics_need_no_key(keyed: ApiThread) -> None:
    for path in ("/health", "/ready", "/metrics"):
        assert _call(keyed, path)[0] == 200, path
    assert _call(keyed, "/v1/models")[0] == 401
    assert (
        _call(keyed, "/v1/models", headers={"Authorization": f"bearer {KEY}"})[0] == 200
    )  # any case


def test_a_browser_preflight_is_answered_for_the_origins_given(keyed: ApiThread) -> None:
    sends = "authorization, content-type, x-stainless-os"
    asks = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": sends}
    path = "/v1/chat/completions"
    status, _, headers = _call(keyed, path, "OPTIONS", headers={"Origin": PAGE, **asks})
    assert (status, headers["Access-Control-Allow-Origin"]) == (200, PAGE)
    allowed = headers["Access-Control-Allow-Headers"].lower()
    assert "authorization" in allowed and "x-stainless-os" in allowed  # OpenAI's JS client
    elsewhere = {"Origin": "http://elsewhere.example", **asks}
    status, _, headers = _call(keyed, path, "OPTIONS", headers=elsewhere)
    assert status == 400 and "Access-Control-Allow-Origin" not in headers
    status, _, headers = _call(
        keyed, "/v1/models", headers={"Origin": PAGE}
    )  # the page reads the 401
    assert (status, headers["Access-Control-Allow-Origin"]) == (401, PAGE)


def test_by_default_any_client_and_no_browser(grpc_server: ServerThread, draft_model: Any) -> None:
    running = _endpoint(grpc_server, draft_model, Access())
    try:
        status, _, headers = _call(running, "/v1/models", headers={"Origin": PAGE})
        assert status == 200 and "Access-Control-Allow-Origin" not in headers
    finally:
        running.stop()


def test_origins_and_keys_as_given() -> None:
    assert origin_list("http://localhost:3000, https://chat.example.com") == (
        PAGE, "https://chat.example.com")  # fmt: skip
    assert origin_list("*") == ("*",)
    for bad in ("localhost:3000", "https://a.example/chat", "ftp://a.example", ""):
        with pytest.raises(ValueError, match="is not a web origin"):
            origin_list(bad)
    assert key_refusal(f"Bearer {KEY}".encode(), KEY) is None
    refused = key_refusal(b"Bearer " + KEY.encode() + b"x", KEY)
    assert refused is not None and KEY not in refused.message
    assert Access().told() == ""
    assert (
        Access(KEY, ("*",)).told()
        == "; an API key required; browsers may call it from any web origin"
    )


@pytest.mark.parametrize("flags", [["--openai-api-key", KEY],
                                   ["--openai-allowed-origins", PAGE],
                                   ["--openai-max-tokens", "5"]])  # fmt: skip
def test_an_endpoint_flag_without_serve_openai_is_refused(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """They were taken and read by nothing (``--openai-max-tokens`` too)."""
    assert main(["draft", "--server", "127.0.0.1:1", "--prompt-ids", "1,2", *flags]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"edgespec draft: {flags[0]} applies to the endpoint: it needs --serve-openai"
    )


def test_an_endpoint_beyond_this_machine_without_a_key_is_warned_of() -> None:
    for local in ("127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.9"):
        assert unguarded_warning(local, Access()) is None, local
    assert unguarded_warning("0.0.0.0", Access(KEY)) is None
    for open_host in ("0.0.0.0", "192.168.1.20", "device-b.lan"):
        assert unguarded_warning(open_host, Access()) == (
            f"warning: the endpoint listens on {open_host}, beyond this machine, without "
            "--openai-api-key: any client that reaches it generates on your verification "
            "servers with this device's token"
        )
