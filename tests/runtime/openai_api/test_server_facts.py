"""What the verification server would refuse is refused by the endpoint before the request
waits for a worker, naming the field: an ``edgespec.window`` whose rounds may draft more
than the server's ``max_draft_tokens``, an ``edgespec.slo_class`` the server lacks (both as
its ``Health`` says them at start, :mod:`edgespec.runtime.openai_api.server_facts`), sampling
with prompt lookup; a default window or SLO class no request could run with is refused at
startup. Before, each was refused by the server after a worker and a session were taken
(a stream got 200 and chunks, then an error), the lookup one as a 500 with a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.config import ConfigError, from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.errors import ApiError
from edgespec.runtime.openai_api.generation import prepare
from edgespec.runtime.openai_api.schema import Defaults, Limits, parse_request
from edgespec.runtime.openai_api.serve import _setup
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import MODEL, word_tokenizer


@pytest.fixture(scope="module")
def classed_server(target: TransformersTarget) -> Iterator[ServerThread]:
    """max_draft_tokens 32 (the default), SLO classes ``default`` and ``fast``."""
    server = start_server(target, host="127.0.0.1", slo_classes={"default": None, "fast": 50.0})
    yield server
    server.stop(grace_s=0)


def _setup_on(server: ServerThread, **settings: Any) -> EdgeSetup:
    """The endpoint's start against ``server``, as ``edgespec draft --serve-openai`` does."""
    address = f"127.0.0.1:{server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft", **settings})
    return _setup(config, RemoteVerifier(address, timeout_s=5.0), None, word_tokenizer(64), 64)


def _refusal(setup: EdgeSetup, **fields: Any) -> ApiError:
    request = parse_request({"model": MODEL, "prompt": "w1 w2", **fields}, False, Defaults(),
                            Limits())  # fmt: skip
    with pytest.raises(ApiError) as info:
        prepare(setup, request, Limits())
    return info.value


@pytest.mark.parametrize(
    ("window", "told"),
    [
        ({"name": "static", "params": {"gamma": 33}}, "static: gamma 33"),
        ({"name": "static", "params": {"gamma": 64, "fused": True}}, "static: gamma 64"),
        ({"name": "awc", "params": {"fused_gamma": 200}}, "awc: fused_gamma 200"),
        ({"name": "dynamic", "params": {"initial_gamma": 30, "max_gamma": 256}},
         "dynamic: max_gamma 256"),
    ],
    ids=["static", "static-fused", "awc-fused", "dynamic-grows-past-it"],
)  # fmt: skip
def test_a_window_over_the_servers_block_limit_is_400_before_any_worker(
    classed_server: ServerThread, window: dict[str, Any], told: str
) -> None:
    setup = _setup_on(classed_server)
    assert setup.max_draft_tokens == 32  # fetched at start, with no --tree too
    error = _refusal(setup, edgespec={"window": window})
    assert (error.status, error.param) == (400, "edgespec.window")
    assert error.message == (
        f"edgespec.window {told} exceeds the server's max_draft_tokens 32, the longest block "
        "it verifies"
    )


def test_a_window_within_the_limit_and_a_trees_chain_gamma_are_taken(
    classed_server: ServerThread,
) -> None:
    """γ 32 is the limit itself; with a tree a distributed round's block is the tree (capped
    at the limit on its own), so only a fused γ counts."""
    setup = _setup_on(classed_server)
    request = parse_request({"model": MODEL, "prompt": "w1", "edgespec": {"window": {
        "name": "static", "params": {"gamma": 32}}}}, False, Defaults(), Limits())  # fmt: skip
    assert prepare(setup, request, Limits()).window.gamma == 32
    tree = _setup_on(classed_server, tree="2,1", tree_max_nodes=8)
    request = parse_request({"model": MODEL, "prompt": "w1", "edgespec": {"window": {
        "name": "static", "params": {"gamma": 40}}}}, False, Defaults(), Limits())  # fmt: skip
    assert prepare(tree, request, Limits()).window.gamma == 40
    fused = _refusal(tree, edgespec={"window": {"name": "awc", "params": {"fused_gamma": 40}}})
    assert fused.param == "edgespec.window"


def test_an_slo_class_the_server_lacks_is_400_naming_the_field(
    classed_server: ServerThread,
) -> None:
    setup = _setup_on(classed_server)
    assert setup.slo_classes == frozenset({"default", "fast"})
    error = _refusal(setup, edgespec={"slo_class": "gold"})
    assert (error.status, error.param, error.message) == (
        400, "edgespec.slo_class",
        'edgespec.slo_class "gold" is not an SLO class of the server, which has ["default", '
        '"fast"]',
    )  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "field", "message"),
    [
        ({"window": {"name": "static", "params": {"gamma": 40}}}, "window.params.gamma",
         "40 exceeds the server's max_draft_tokens 32, the longest block it verifies"),
        ({"slo_class": "gold"}, "slo_class",
         "'gold' is not an SLO class of the server, which has ['default', 'fast']"),
    ],
    ids=["window", "slo-class"],
)  # fmt: skip
def test_a_default_no_request_could_run_with_is_refused_at_startup(
    classed_server: ServerThread, settings: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        _setup_on(classed_server, **settings)
    assert (info.value.path, info.value.message) == (field, message)


def test_an_awc_window_over_a_small_limit_names_its_fixed_max_gamma() -> None:
    """AWC's distributed rounds reach its stabiliser's max_gamma (12), no parameter of it."""
    config = from_dict(DrafterConfig, {"server": "127.0.0.1:1", "draft": "tiny-draft"})
    setup = EdgeSetup(config, None, word_tokenizer(64), 64, 24, (), max_draft_tokens=8)
    error = _refusal(setup, edgespec={"window": {"name": "awc"}})
    assert (error.status, error.param) == (400, "edgespec.window")
    assert error.message == (
        "edgespec.window awc: its fixed max_gamma 12 exceeds the server's max_draft_tokens 8, "
        "the longest block it verifies"
    )


@pytest.mark.parametrize(
    ("window", "name"),
    [
        ({"name": "awc"}, "awc"),
        ({"name": "static", "params": {"gamma": 4, "fused": True}}, "static"),
    ],
    ids=["awc", "static-fused"],
)
def test_a_window_that_may_fuse_on_a_server_without_a_draft_is_400_before_any_worker(
    classed_server: ServerThread, window: dict[str, Any], name: str
) -> None:
    """The server (no --draft) says in Health that it runs no fused rounds: the request is
    refused before it drafts (was: streamed text, then an error at its first fused round)."""
    setup = _setup_on(classed_server)
    assert setup.runs_fused_rounds is False
    error = _refusal(setup, edgespec={"window": window})
    assert (error.status, error.param, error.message) == (
        400, "edgespec.window",
        f"edgespec.window {name}: its rounds may go fused, and the server runs no fused rounds "
        "(it was started without --draft)",
    )  # fmt: skip
    request = parse_request({"model": MODEL, "prompt": "w1", "edgespec": {"window": {
        "name": "dynamic"}}}, False, Defaults(), Limits())  # fmt: skip
    assert prepare(setup, request, Limits()).window is not None  # distributed only: taken
    with pytest.raises(ConfigError) as info:  # the endpoint's own default: at startup
        _setup_on(classed_server, window={"name": "awc"})
    assert (info.value.path, info.value.message) == (
        "window.name",
        "AwcWindow's rounds may go fused, and the server runs no fused rounds (it was started "
        "without --draft): choose a window policy that stays distributed (static, dynamic), or "
        "a server started with --draft",
    )
