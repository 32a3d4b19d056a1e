"""Fixtures: a loopback verification server over the tiny target, and the OpenAI-compatible
endpoint on loopback drafting with the tiny draft, through a word-level tokenizer; requests
posted to it as raw bytes, and its refusals read back."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


from edgespec.config import from_dict  # noqa: E402
from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.edge.config import DrafterConfig  # noqa: E402
from edgespec.runtime.openai_api.app import ApiConfig, build_app  # noqa: E402
from edgespec.runtime.openai_api.edge_setup import EdgeSetup  # noqa: E402
from edgespec.runtime.openai_api.schema import Limits  # noqa: E402
from edgespec.runtime.openai_api.serve import ApiThread  # noqa: E402
from edgespec.runtime.wire.grpc_client import RemoteVerifier  # noqa: E402
from edgespec.runtime.wire.server_thread import ServerThread  # noqa: E402
from tests.runtime.conftest import start_server  # noqa: E402
from tests.word_tokenizer import make_word_tokenizer  # noqa: E402

MODEL = "tiny"
LIMITS = Limits(max_body_bytes=4096, max_prompt_tokens=64, max_tokens=4000)
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


def word_tokenizer(vocab_size: int, chat: bool = True) -> Any:
    """Words ``w0`` … ``w{V-1}`` as ids (:mod:`tests.word_tokenizer`); decoding joins them
    without spaces; ``chat``: a template that joins the messages' contents."""
    return make_word_tokenizer(vocab_size, chat_template=CHAT_TEMPLATE if chat else None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def endpoint(
    address: str,
    draft_model: Any,
    tokenizer: Any,
    max_message_bytes: int = 4 << 20,
    **settings: Any,
) -> ApiThread:
    """The endpoint on loopback, verifying on the server at ``address``; ``settings``:
    more DrafterConfig fields (``retry_timeout_s=1.0``, say)."""
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft", **settings})
    verifier = RemoteVerifier(address, timeout_s=5.0, max_message_bytes=max_message_bytes)
    setup = EdgeSetup(config, draft_model, tokenizer, 64, 24, (verifier,))
    return ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS)), "127.0.0.1").start()


@pytest.fixture(scope="module")
def grpc_server(target: TransformersTarget) -> Iterator[ServerThread]:
    server = start_server(target, host="127.0.0.1")
    yield server
    server.stop(grace_s=0)


@pytest.fixture(scope="module")
def api(grpc_server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    running = endpoint(f"127.0.0.1:{grpc_server.port}", draft_model, word_tokenizer(64))
    yield running
    running.stop()


@pytest.fixture
def client(api: ApiThread) -> Any:
    return openai.OpenAI(
        base_url=f"http://127.0.0.1:{api.port}/v1", api_key="unused", max_retries=0, timeout=60
    )


def _post(
    api: ApiThread, path: str, data: bytes, content_type: str = "application/json"
) -> tuple[int, dict[str, Any], Any]:
    """POST ``data`` to ``path``: the status, the JSON reply and the headers."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{api.port}{path}", data=data,
        headers={"Content-Type": content_type}, method="POST",
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers


def _error(
    api: ApiThread, body: Any, path: str = "/v1/completions", content_type: str = "application/json"
) -> tuple[int, dict[str, Any]]:
    """The status and the OpenAI error of ``body`` (bytes as they are, else as JSON),
    checked to have the OpenAI error shape."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, reply, _ = _post(api, path, raw, content_type)
    assert set(reply) == {"error"}
    assert set(reply["error"]) == {"message", "type", "param", "code"}
    return status, reply["error"]
