"""A drafter whose round does not commit within its progress budget gives up, closes what
it opened, and leaves the server no session of it: a server whose forward pass takes 2 s
against a 0.5 s request timeout (each call is sent again until its pass ends) and a 1 s
progress timeout, as `edgespec draft` and as the OpenAI endpoint (a 504, OpenAI-shaped).
With the default progress budget the same server's rounds finish."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server

FORWARD_S = 2.0
TIMEOUT_S = 0.5  # every verification's deadline passes: resent until its pass ends
PROMPT = ",".join(str(i % 60 + 1) for i in range(300))


class SlowTarget(TransformersTarget):
    """The tiny target, each forward pass ``FORWARD_S`` longer (a long prompt's prefill)."""

    def forward(self, items: Sequence[Any]) -> Any:
        time.sleep(FORWARD_S)
        return super().forward(items)


@pytest.fixture
def slow_server(target: TransformersTarget, target_model: Any) -> Iterator[ServerThread]:
    # the session's ``target`` passed the self-checks on this model; its 2 s passes would
    # make them take a minute
    server = start_server(SlowTarget(target_model, check_masks=False), host="127.0.0.1")
    yield server
    server.stop(grace_s=0)


def _sessions(server: ServerThread) -> int:
    assert server.service is not None
    return server.service.stats().num_sessions


def _in_thread(work: Any, timeout_s: float) -> Any:
    """``work()`` in a daemon thread; fails if it has not returned in ``timeout_s``."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert out, f"still running after {timeout_s:g} s (reconnecting without end)"
    return out[0]


def test_draft_gives_up_closes_its_sessions_exit_3(
    slow_server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", f"127.0.0.1:{slow_server.port}", "--draft", "ngram",
            "--prompt-ids", PROMPT, "--set", f"request_timeout_s={TIMEOUT_S}",
            "--progress-timeout-s", "1"]  # fmt: skip
    started = time.monotonic()
    assert _in_thread(lambda: main(argv), timeout_s=40) == 3
    took_s = time.monotonic() - started
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        "edgespec draft: gave up after 1 s without a committed token (0 committed; "
        "last error UNAVAILABLE: Deadline Exceeded)"
    ), err
    assert "Traceback" not in "\n".join(err)
    assert took_s < 3 * TIMEOUT_S + 10  # 2 late calls, nothing else waited on
    assert _sessions(slow_server) == 0
    time.sleep(FORWARD_S)  # a verification still running on the server ends
    assert _sessions(slow_server) == 0


def test_with_the_default_budget_the_rounds_finish_resent(
    slow_server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", f"127.0.0.1:{slow_server.port}", "--draft", "ngram",
            "--prompt-ids", PROMPT, "--request-timeout-s", str(TIMEOUT_S),
            "--max-new-tokens", "2", "--max-reconnects", "0"]  # fmt: skip
    assert _in_thread(lambda: main(argv), timeout_s=40) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split("]")) == 3  # two tokens, as token ids: "[a] [b] \n"
    said = [line for line in captured.err.splitlines() if "sending" in line]
    assert len(said) >= 6  # three a round, two rounds (a token each: γ capped at 1, 0)
    full = [n for n, line in enumerate(said) if "sending the same block" in line]
    assert len(full) == 2 and full[0] == 0  # said in full once a round, then in short
    assert said[1].startswith("edgespec draft: still no answer: sending it again, for up to ")
    assert said[1].endswith(" s more (--progress-timeout-s)")
    assert _sessions(slow_server) == 0


def _post(request: urllib.request.Request) -> tuple[int, Any, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def test_the_openai_endpoint_answers_504_when_the_drafter_gives_up(
    slow_server: ServerThread, draft_model: Any
) -> None:
    from edgespec.config import from_dict
    from edgespec.runtime.edge.config import DrafterConfig
    from edgespec.runtime.openai_api.app import ApiConfig, build_app
    from edgespec.runtime.openai_api.edge_setup import EdgeSetup
    from edgespec.runtime.openai_api.serve import ApiThread
    from edgespec.runtime.wire.grpc_client import RemoteVerifier
    from tests.runtime.openai_api.conftest import word_tokenizer

    address = f"127.0.0.1:{slow_server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft",
                                       "progress_timeout_s": 1})  # fmt: skip
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24,
                      (RemoteVerifier(address, timeout_s=TIMEOUT_S),))  # fmt: skip
    api = ApiThread(build_app(setup, ApiConfig("tiny")), "127.0.0.1").start()
    try:
        body = json.dumps({"model": "tiny", "prompt": "w1 w2 w3", "max_tokens": 4}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{api.port}/v1/completions",
                                         data=body, method="POST",
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        status, headers, reply = _in_thread(lambda: _post(request), timeout_s=60)
    finally:
        api.stop()
    assert (status, headers["Retry-After"]) == (504, "1")
    error = json.loads(reply)["error"]
    assert (error["type"], error["code"]) == ("server_error", "no_progress")
    assert error["message"].startswith("the drafter gave up after 1 s without")
    assert _sessions(slow_server) == 0
