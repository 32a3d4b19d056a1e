"""``edgespec serve`` and ``edgespec draft`` mistakes found before any server answers, each
in one line with its exit code: serve without a target, draft against a port nothing
listens on, and ``--lookup`` and ``--tree`` settings a draft cannot take."""

from __future__ import annotations

import pytest

from edgespec.cli import main
from tests.runtime.commands.draft_stages import split_stages


def test_serve_without_target_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve"]) == 2
    assert (
        "config field 'target': no target model given (--target MODEL)" in capsys.readouterr().err
    )


def test_draft_against_no_server_says_what_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["draft", "--server", f"127.0.0.1:{port}", "--draft", "ngram", "--prompt-ids", "1,2"]
    assert main(args) == 1
    stages, (err,) = split_stages(capsys.readouterr().err)
    assert stages == [f"connecting to 127.0.0.1:{port} ..."]
    assert err.startswith("edgespec draft: UNAVAILABLE: ")
    assert f"127.0.0.1:{port}" in err
    assert err.endswith(" (is an `edgespec serve` running and reachable at the --server address?)")


def test_draft_lookup_needs_a_neural_draft(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["draft", "--prompt-ids", "5,6", "--lookup"]
    assert main([*args, "--draft", "ngram"]) == 2
    assert "edgespec draft: --lookup: needs a neural draft model" in capsys.readouterr().err


def test_draft_tree_flag_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["draft", "--prompt-ids", "5,6", "--draft", "some/model"]
    assert main([*args, "--tree", "2,0"]) == 2
    err = capsys.readouterr().err
    assert "edgespec draft: --tree: tree branching needs integers >= 1, got '2,0'" in err
    assert main(["draft", "--prompt-ids", "5", "--draft", "ngram", "--tree", "2"]) == 2
    assert "edgespec draft: --tree: needs a neural draft model" in capsys.readouterr().err
    assert main([*args, "--tree", "2", "--tree-min-prob", "1.5"]) == 2
    assert "edgespec draft: --tree-min-prob: must be in [0, 1), got 1.5" in capsys.readouterr().err
