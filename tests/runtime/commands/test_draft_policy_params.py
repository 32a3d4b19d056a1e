"""``edgespec draft``'s policies (``window``, ``routing``): params given alone (``--set
window.params.gamma=3``) are the default policy's, and a bad param is refused at its field,
exit 2, before anything connects; a ``--tree`` deeper than γ names γ where it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import PolicySpec, load_config
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.wire import drafter_clients as wire_clients

TWO_SERVERS = ["--server", "127.0.0.1:1", "--server", "127.0.0.1:2"]
JSQ_ROUTED = [*TWO_SERVERS, "--routing", "jsq"]
NO_JSQ_PARAM = (
    "config field 'routing.params': routing policy 'jsq' has no parameter(s) ['x']; known: []"
)


def test_params_alone_are_the_default_policys(tmp_path: Path) -> None:
    """Were ``config field 'window.name': required field is missing`` (and
    ``'routing.name'``), from an override and from a file alike."""
    config = load_config(DrafterConfig, None, ["window.params.gamma=3", "routing.params={}"])
    assert (config.window, config.routing) == (
        PolicySpec("static", {"gamma": 3}),
        PolicySpec("jsq"),
    )
    file = tmp_path / "drafter.yaml"
    file.write_text("window:\n  params: {gamma: 2}\n")
    config = load_config(DrafterConfig, file, ["window.params.fused=true"])
    assert config.window == PolicySpec("static", {"gamma": 2, "fused": True})


@pytest.fixture
def unconnected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if the command makes a client of any server."""

    def connect(config: Any) -> Any:
        raise AssertionError(f"connected to {config.server} before the flags were checked")

    monkeypatch.setattr(wire_clients, "drafter_clients", connect)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (  # was "config field 'window.name': required field is missing"
            ["--prompt-ids", "1", "--set", "window.params.gamma=0"],
            "config field 'window.params.gamma': window policy 'static': gamma must be >= 1, got 0",
        ),
        (  # was "config field 'routing.name': required field is missing"
            ["--prompt-ids", "1", *TWO_SERVERS, "--set", "routing.params.x=1"],
            NO_JSQ_PARAM,
        ),
        (  # was said after "connecting to 127.0.0.1:1, 127.0.0.1:2 ..."
            ["--prompt-ids", "1", *JSQ_ROUTED, "--set", "routing.params.x=1"],
            NO_JSQ_PARAM,
        ),
        (  # was said after "connecting to ..." too
            ["--serve-openai", "127.0.0.1:0", *JSQ_ROUTED, "--set", "routing.params.x=1"],
            NO_JSQ_PARAM,
        ),
        (  # one server: the routing policy is checked all the same
            ["--prompt-ids", "1", "--routing", "jsq", "--set", "routing.params.x=1"],
            NO_JSQ_PARAM,
        ),
    ],
)
def test_a_bad_policy_param_is_named_at_its_field_before_anything_connects(
    unconnected: None, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["draft", "--draft", "ngram", *flags]) == 2
    assert capsys.readouterr().err == f"edgespec draft: {message}\n"


@pytest.mark.parametrize(
    ("yaml", "flags", "message"),
    [
        ("", ["--tree", "2,2,2", "--gamma", "2"], "--tree 2,2,2 has 3 depths, more than --gamma 2"),
        (  # was "... more than --gamma 2": no --gamma was given
            "", ["--tree", "2,2,2", "--set", "window.params.gamma=2"],
            "--tree 2,2,2 has 3 depths, more than window.params.gamma 2",
        ),
        (
            "window: {name: static, params: {gamma: 2}}\n", ["--tree", "2,2,2"],
            "--tree 2,2,2 has 3 depths, more than window.params.gamma 2",
        ),
        (  # was "config field 'tree': --tree 2,2,2 has 3 depths, more than --gamma 2"
            "window: {name: static, params: {gamma: 2}}\ntree: '2,2,2'\n", [],
            "config field 'tree': 2,2,2 has 3 depths, more than window.params.gamma 2",
        ),
        (  # the file's tree, the flag's γ
            "tree: '2,2,2'\n", ["--gamma", "2"],
            "config field 'tree': 2,2,2 has 3 depths, more than --gamma 2",
        ),
    ],
)  # fmt: skip
def test_a_tree_deeper_than_gamma_names_gamma_where_it_came_from(
    unconnected: None, yaml: str, flags: list[str], message: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    file = tmp_path / "drafter.yaml"
    file.write_text(yaml)
    argv = ["draft", "--draft", "some/model", "--prompt-ids", "1", "--config", str(file)]
    assert main([*argv, *flags]) == 2
    assert capsys.readouterr().err == f"edgespec draft: {message}\n"
