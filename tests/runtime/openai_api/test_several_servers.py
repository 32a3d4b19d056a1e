"""The endpoint over several verification servers serves one model (servers of different
targets or vocabularies are refused at start, naming each), and holds every request to
what all of them take, as routing may send it to any: the smallest context (and, with
``--tree``, the smallest ``max_draft_tokens``) the servers' Health reports, said in one
line when they differ; a server that does not answer at start is left to refuse beyond
its own. It took both from the one server routed to at start. In-process fakes stand for
the servers' clients (``grpc_client.RemoteVerifier``)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from edgespec.config import from_dict
from edgespec.errors import UserInputError
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerHealth
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread, _setup
from edgespec.runtime.wire import grpc_client
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _error, word_tokenizer

SERVERS = ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")


class FakeClient:
    """A server's client whose Health says ``LIMITS[address]`` (a ``RequestError`` stands
    for a server that does not answer); ``ASKED`` counts the Health calls per server."""

    LIMITS: ClassVar[dict[str, dict[str, int | RequestError | None]]] = {}
    ASKED: ClassVar[dict[str, int]] = {}

    def __init__(self, address: str, *_: Any) -> None:
        self.address = address

    def check_credentials(self) -> None:
        pass  # it takes any token

    def describe(self) -> ServerHealth:
        said: dict[str, Any] = self.LIMITS[self.address]
        FakeClient.ASKED[self.address] = FakeClient.ASKED.get(self.address, 0) + 1
        for value in said.values():
            if isinstance(value, RequestError):
                raise value
        return ServerHealth(
            serving=True,
            vocab_size=said.get("vocab_size") or 64,
            target_name=said.get("target", MODEL),
            max_draft_tokens=said["max_draft_tokens"],
            max_context_tokens=said["max_context_tokens"],
            slo_classes=None,  # any class
            max_sessions_per_client=None,
        )


def _setup_over(
    monkeypatch: pytest.MonkeyPatch, limits: dict[str, dict[str, Any]], **fields: Any
) -> EdgeSetup:
    """``_setup`` over ``limits``'s servers, the first being the one routed to at start."""
    monkeypatch.setattr(FakeClient, "LIMITS", limits)
    monkeypatch.setattr(FakeClient, "ASKED", {})
    monkeypatch.setattr(grpc_client, "RemoteVerifier", FakeClient)
    config = from_dict(DrafterConfig, {"server": ",".join(limits), "draft": "tiny-draft",
                                       **fields})  # fmt: skip
    return _setup(config, FakeClient(next(iter(limits))), None, word_tokenizer(64), 64)


def _context(*contexts: Any) -> dict[str, dict[str, Any]]:
    """A server per context given, each saying that context."""
    servers = SERVERS[: len(contexts)]
    return {a: {"max_context_tokens": c, "max_draft_tokens": 32}
            for a, c in zip(servers, contexts, strict=True)}  # fmt: skip


def test_the_smallest_context_holds_and_is_told(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = _setup_over(monkeypatch, _context(4096, 40))
    assert setup.max_context_tokens == 40  # was 4096: the first server's
    asked = FakeClient.ASKED
    assert asked == {SERVERS[0]: 1, SERVERS[1]: 1}  # each server's Health once (was 6 calls)
    assert setup.target_name == MODEL
    assert capsys.readouterr().err == (
        "edgespec draft: the servers' max_context_tokens differ (127.0.0.1:1 4096, "
        "127.0.0.1:2 40): the endpoint keeps to 40, the smallest\n"
    )
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS)), "127.0.0.1").start()
    try:
        status, error = _error(api, {"model": MODEL, "prompt": "w1 " * 30, "max_tokens": 11})
    finally:
        api.stop()
    assert (status, error["param"], error["code"], error["message"]) == (
        400, "prompt", "context_length_exceeded",
        "the prompt is 30 tokens and max_tokens is 11: 41 tokens, over the target's context "
        "of 40; shorten the prompt or lower max_tokens",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("contexts", "context"),
    [
        ((4096, 4096), 4096),
        ((4096, RequestError(ErrorCode.UNAVAILABLE, "down"), None), 4096),
        ((None, 2048), 2048),  # the first predates the field: the other's
        ((None, None), None),  # left to the servers' own refusals
    ],
    ids=["same", "one-down-one-silent", "first-silent", "none-say"],
)
def test_servers_that_agree_or_do_not_say_are_not_told(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    contexts: tuple[Any, ...],
    context: int | None,
) -> None:
    assert _setup_over(monkeypatch, _context(*contexts)).max_context_tokens == context
    assert capsys.readouterr().err == ""


def test_a_tree_is_capped_at_the_smallest_draft_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    limits = {SERVERS[0]: {"max_context_tokens": 4096, "max_draft_tokens": 32},
              SERVERS[1]: {"max_context_tokens": 4096, "max_draft_tokens": 8}}  # fmt: skip
    setup = _setup_over(monkeypatch, limits, tree="2,2")
    assert setup.max_nodes == 8  # was 24, tree_max_nodes: under the first server's 32
    assert capsys.readouterr().err == (
        "edgespec draft: the servers' max_draft_tokens differ (127.0.0.1:1 32, 127.0.0.1:2 8): "
        "the endpoint keeps to 8, the smallest\n"
    )


@pytest.mark.parametrize(
    ("second", "told"),
    [
        ({"target": "other-model"}, "127.0.0.2:2 other-model of 64 tokens"),
        ({"vocab_size": 65}, "127.0.0.2:2 tiny of 65 tokens"),
        ({"target": None}, "127.0.0.2:2 unnamed of 64 tokens"),
    ],
    ids=["target", "vocabulary", "unnamed"],
)
def test_servers_of_different_targets_are_refused_naming_each(
    monkeypatch: pytest.MonkeyPatch, second: dict[str, Any], told: str
) -> None:
    limits = {"127.0.0.1:1": {"max_context_tokens": 4096, "max_draft_tokens": 32},
              "127.0.0.2:2": {"max_context_tokens": 4096, "max_draft_tokens": 32, **second},
              "127.0.0.3:3": {"max_context_tokens": RequestError(ErrorCode.UNAVAILABLE, "down"),
                              "max_draft_tokens": 32}}  # fmt: skip
    with pytest.raises(UserInputError) as raised:
        _setup_over(monkeypatch, limits)
    assert str(raised.value) == (
        f"--server: the servers serve different targets (127.0.0.1:1 {MODEL} of 64 tokens, "
        f"{told}); the endpoint serves one model: give servers of one target"
    )
