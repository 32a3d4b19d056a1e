"""Text that is not UTF-8 on ``edgespec draft``'s command line or ``--interactive`` input
(Python hands each bad byte on as a lone surrogate) is refused in one line: it ended in a
tokenizer's ``TypeError`` traceback, in ``--interactive`` losing the conversation."""

from __future__ import annotations

import argparse
import io

import pytest

from edgespec.argument_types import text_problem, utf8_text
from edgespec.cli import main
from edgespec.runtime.commands.draft_conversation import turns


def test_a_bad_byte_or_a_lone_surrogate_is_named_where_it_is() -> None:
    assert text_problem("w5 w6") is None and utf8_text("héllo ✓") == "héllo ✓"
    assert text_problem("w5 \udcff") == "is not valid UTF-8 text (byte 0xff at character 3)"
    assert text_problem("\ud800") == "is not valid UTF-8 text (U+D800 at character 0)"
    with pytest.raises(argparse.ArgumentTypeError, match="byte 0xfe at character 0"):
        utf8_text("\udcfe")


@pytest.mark.parametrize("flag", ["--prompt", "--system"])
def test_draft_refuses_it_on_the_command_line_before_anything_runs(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram", "--prompt", "w5"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--chat", flag, "w5 \udcff"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec draft: error: argument {flag}: is not valid UTF-8 text (byte 0xff at "
        "character 3)"
    )


def test_an_interactive_line_of_bad_bytes_is_refused_and_the_talk_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = io.StringIO("w5 w9\n\udcff\udcfe bad\nw7\n")
    assert list(turns(lines)) == ["w5 w9", "w7"]
    assert capsys.readouterr().err == (
        "edgespec draft: --interactive: the line is not valid UTF-8 text (byte 0xff at "
        "character 0)\n"
    )
