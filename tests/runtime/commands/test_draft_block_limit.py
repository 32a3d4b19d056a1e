"""``edgespec draft`` checks its rounds' block against the server's ``max_draft_tokens`` once
the server is reached, before anything loads: a ``--gamma`` (or window) over it was sent,
and the server refused the first round that reached it (a dynamic window's, mid-output)."""

from __future__ import annotations

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from tests.runtime.conftest import ServerFactory, start_server

LIMIT_TOLD = "exceeds the server's max_draft_tokens 8, the longest block it verifies"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--gamma", "9"], f"--gamma: 9 {LIMIT_TOLD}"),
        (["--mode", "fused", "--gamma", "9"], f"--gamma: 9 {LIMIT_TOLD}"),
        (["--set", "window.name=dynamic", "--set", "window.params.max_gamma=40"],
         f"config field 'window.params.max_gamma': 40 {LIMIT_TOLD}"),
        (["--set", "window.name=awc"],  # its max_gamma is no parameter: the policy is named
         "config field 'window.name': AwcWindow's rounds reach its fixed max_gamma 12, over "
         "the server's max_draft_tokens 8, the longest block it verifies: choose another "
         "window policy, or a server that verifies longer blocks"),
    ],
    ids=["gamma", "fused-mode", "dynamic-max-gamma", "awc-fixed-max-gamma"],
)  # fmt: skip
def test_a_block_over_the_servers_limit_is_refused_at_startup(
    make_server: ServerFactory, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    server = make_server(max_draft_tokens=8)
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram",
            "--prompt-ids", "1,2,3", "--max-new-tokens", "4", *flags]  # fmt: skip
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().endswith(f"edgespec draft: {said}")


def test_a_block_at_the_limit_runs(
    make_server: ServerFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    server = make_server(max_draft_tokens=8)
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram",
            "--prompt-ids", "1,2,3", "--max-new-tokens", "4", "--gamma", "8"]  # fmt: skip
    assert main(argv) == 0


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--set", "window.name=awc"],
         "config field 'window.name': AwcWindow's rounds may go fused, and the server runs no "
         "fused rounds (it was started without --draft): choose a window policy that stays "
         "distributed (static, dynamic), or a server started with --draft"),
        (["--mode", "fused"],
         "--mode fused: the server runs no fused rounds (it was started without --draft)"),
    ],
    ids=["awc", "fused-mode"],
)  # fmt: skip
def test_fused_rounds_on_a_server_without_a_draft_are_refused_at_startup(
    target: TransformersTarget, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    """Health says the server runs no fused rounds: refused before any text (AWC printed
    its first distributed rounds' text, then failed FAILED_PRECONDITION, exit 1)."""
    server = start_server(target)  # no co-located draft
    try:
        argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram",
                "--prompt-ids", "1,2,3", "--max-new-tokens", "4", *flags]  # fmt: skip
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.strip().endswith(f"edgespec draft: {said}")
    finally:
        server.stop(grace_s=0)
