"""A server window whose rounds may decide a block longer than the server's own
``max_draft_tokens`` is refused before anything loads: it started, and every fused run
then failed at its second round (``draft block has 12 tokens; the limit is 8``, the
client blamed for the server's choice), or a device's next round handed back that γ."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError, from_dict
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.registry import build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.fused_setup import ServerWindow
from edgespec.runtime.server.service import VerificationService

TOO_LONG = (
    "config field 'window.params.gamma': 40 exceeds the server's max_draft_tokens 8, the "
    "longest block it verifies"
)
AWC_FIXED = (
    "config field 'window.name': AwcWindow's rounds reach its fixed max_gamma 12, over the "
    "server's max_draft_tokens 8, the longest block it verifies: choose another window "
    "policy, or a server that verifies longer blocks"
)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "distributed"])
def test_a_window_over_the_servers_block_limit_is_refused(fused: bool) -> None:
    window = build_policy("window", "static", {"gamma": 40, "fused": fused})
    with pytest.raises(ConfigError) as info:
        ServerWindow(window, 8)
    assert str(info.value) == TOO_LONG
    ServerWindow(window, 40)  # at the limit: kept
    with pytest.raises(ConfigError) as info:
        ServerWindow(build_policy("window", "awc", {}), 8)
    assert str(info.value) == AWC_FIXED


def test_the_service_refuses_it_too(target: TransformersTarget) -> None:
    config = from_dict(ServerConfig, {"max_draft_tokens": 8})
    window = build_policy("window", "static", {"gamma": 40, "fused": True})
    with pytest.raises(ConfigError, match="exceeds the server's max_draft_tokens 8"):
        VerificationService(VerificationEngine(target), config, FcfsBatching(), window=window)


def test_serve_refuses_it_before_loading_the_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The target is an empty folder: it would fail to load, so the refusal came first."""
    flags = ["--target", str(tmp_path), "--port", "0", "--set", "max_draft_tokens=8"]
    params = ["--window", "static", "--window-params", '{"gamma": 40, "fused": true}']
    assert main(["serve", *flags, *params]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec serve: {TOO_LONG}"
    assert main(["serve", *flags, "--window", "awc"]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec serve: {AWC_FIXED}"
