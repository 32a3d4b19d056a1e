"""``edgespec draft``'s output cut short (a lost server, Ctrl-C, SIGTERM) ends its line
before the error or stop line on stderr: on a terminal that line followed the last token
(``26, 27, 28edgespec draft: UNAVAILABLE ...``, ``Q: 1.edgespec draft: interrupted``). The
process-level case: tests/runtime/commands/test_command_signals.py (SIGTERM mid-prompt)."""

from __future__ import annotations

import pytest

from edgespec.runtime.commands.draft_output import Shown


def test_an_output_cut_short_ends_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(KeyboardInterrupt), Shown(None) as shown:
        shown.push((1, 2))
        raise KeyboardInterrupt
    assert capsys.readouterr().out == "[1, 2] \n"


def test_a_finished_output_ends_once_and_nothing_shown_adds_no_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Shown(None) as shown:
        shown.push((3,))
        shown.end()
    assert capsys.readouterr().out == "[3] \n"
    with pytest.raises(ConnectionError), Shown(None):
        raise ConnectionError("lost before its first token")
    assert capsys.readouterr().out == ""


def test_a_reopening_is_said_on_a_line_of_its_own(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generation was silent while it reopened a lost session (up to
    --retry-timeout-s); on a terminal the line starts after the output's last token."""
    from edgespec.runtime.errors import ErrorCode, RequestError

    said = (
        "edgespec draft: the session was lost (UNAVAILABLE: failed to connect) after 28 "
        "tokens: reopening it with them, retried for up to 30 s (--retry-timeout-s)\n"
    )
    lost = RequestError(ErrorCode.UNAVAILABLE, "failed to connect")
    shown = Shown(None)
    shown.reconnecting(lost, 28, 30.0)  # stdout not a terminal: the line as it is
    assert capsys.readouterr() == ("", said)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    shown.push((5,))
    shown.reconnecting(lost, 28, 30.0)
    assert capsys.readouterr() == ("[5] ", "\n" + said)  # stdout's text left as it is


def test_a_long_cause_is_cut_at_a_word(capsys: pytest.CaptureFixture[str]) -> None:
    """gRPC's message ends with what failed; it was cut at 120 characters mid-word
    (``... remote host: Connection re... (160 characters)``)."""
    from edgespec.runtime.errors import ErrorCode, RequestError

    grpc = ("failed to connect to all addresses; last error: UNKNOWN: ipv4:10.20.30.40:50051: "
            "Failed to connect to remote host: Connection refused")  # fmt: skip
    Shown(None).reconnecting(RequestError(ErrorCode.UNAVAILABLE, grpc), 3, 30.0)
    assert f"(UNAVAILABLE: {grpc}) after 3 tokens" in capsys.readouterr().err
    longer = RequestError(ErrorCode.UNAVAILABLE, grpc + " " + "x" * 60 + " and more words")
    Shown(None).resending(longer, 3, 10.0)
    line = capsys.readouterr().err
    assert f"(UNAVAILABLE: {grpc} …; --request-timeout-s)" in line
