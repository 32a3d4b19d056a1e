"""``--guard-ms``, WISP's guard δ: ``edgespec serve``'s flag, and ``bench serve``'s for its
own server (it had none: a wisp bench ran at the default 5 ms only). Checked as the flag,
before anything starts: ``serve --guard-ms -1`` was ``config field
'batching.params.guard_s': ... got -0.001`` (seconds, not the flag)."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.loadgen import session

WISP = ["--batching", "wisp", "--profile", "a100-qwen3-32b"]


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    return str(capsys.readouterr().err.splitlines()[-1])


@pytest.mark.parametrize("command", [["serve", "--target", "never-loaded"], ["bench", "serve"]])
def test_a_negative_guard_is_the_flags_error(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    name = " ".join(command[:2]) if command[0] == "bench" else "serve"
    assert _usage_error([*command, *WISP, "--guard-ms", "-1"], capsys) == (
        f"edgespec {name}: error: argument --guard-ms: must be >= 0, got -1"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--guard-ms", "3"], "--batching: --profile and --guard-ms configure the wisp batching "
         "policy; batching is 'fcfs' (add --batching wisp)"),
        (["--server", "127.0.0.1:1", "--guard-ms", "3"],
         "--guard-ms sets the bench's own server (no --server)"),
    ],
)  # fmt: skip
def test_a_guard_where_it_sets_nothing_is_refused(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "serve", *flags]) == 2
    assert capsys.readouterr().err == f"edgespec bench serve: {message}\n"


def test_the_own_server_is_started_with_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []

    class Stop(Exception):
        pass

    def server_process(serve: list[str], *args: Any) -> None:
        started.append(serve)
        raise Stop

    monkeypatch.setattr(session, "ServerProcess", server_process)
    with pytest.raises(Stop):
        main(["bench", "serve", *WISP, "--guard-ms", "2.5", "--no-check", "--duration-s", "1"])
    flags = started[0]
    assert flags[flags.index("--guard-ms") + 1] == "2.5"
    assert flags[flags.index("--profile") + 1] == "a100-qwen3-32b"
