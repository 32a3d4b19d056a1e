"""``edgespec draft --prompt`` against a server that went silent after it was reached (its
``Health`` answered, then nothing: :mod:`tests.runtime.hung_server`): the first open fails
after ``--request-timeout-s``, and its close (the server may have opened the session) takes
at most ``CLOSE_TIMEOUT_S`` more, not another request timeout. The close held against a
second Ctrl-C says that bound: tests/runtime/commands/test_command_signals.py. A call past
its deadline is said as one, not as a server that may not be running (which misled about a
reachable server busy with a long prompt's first pass)."""

from __future__ import annotations

import time

import pytest

from edgespec.cli import main
from edgespec.config import from_dict
from edgespec.policies.window import StaticWindow
from edgespec.runtime.commands.draft_run import DraftRun
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.wire.drafter_clients import CLOSE_TIMEOUT_S, drafter_clients
from tests.runtime.hung_server import VOCAB_SIZE, assert_deadlines, hung_server, hung_servicer

REQUEST_TIMEOUT_S = 4.0


def test_the_first_open_fails_after_one_request_timeout_and_a_short_close() -> None:
    """Each call's deadline as the server has it: the open's the request timeout, the
    close's ``CLOSE_TIMEOUT_S`` (it was a second request timeout: 4 + 4 s). The whole wait,
    less than two request timeouts, holds on a loaded machine (7.1 s of the 6 s a run on
    three workers on two cores, a profile beside them, took)."""
    with hung_servicer(health_hangs=False) as (address, servicer):
        config = from_dict(DrafterConfig, {"server": address, "draft": "ngram",
                                           "request_timeout_s": REQUEST_TIMEOUT_S})  # fmt: skip
        (verifier,) = drafter_clients(config)
        run = DraftRun(config, verifier, (5, 6, 7), None, None)
        start = time.monotonic()
        with pytest.raises(RequestError) as info:
            run.distributed(None, VOCAB_SIZE, StaticWindow(4), None, False)
        took_s = time.monotonic() - start
    assert (info.value.code, info.value.message) == (ErrorCode.UNAVAILABLE, "Deadline Exceeded")
    assert servicer.calls == ["OpenSession", "CloseSession"]
    assert_deadlines(servicer, (REQUEST_TIMEOUT_S, CLOSE_TIMEOUT_S))
    assert took_s < 2 * REQUEST_TIMEOUT_S  # was 8 s and more: 4 + 4


DEADLINE_LINE = (
    "edgespec draft: UNAVAILABLE: Deadline Exceeded (the server did not answer within the "
    "call's deadline: it is hung, or busy with a pass that takes longer, such as a long "
    "prompt's first (raise --request-timeout-s to wait for it))"
)


@pytest.mark.parametrize("opens", [False, True], ids=["silent", "silent-verify"])
def test_a_call_past_its_deadline_says_so_and_names_the_flag(
    opens: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said "is an `edgespec serve` running and reachable at the --server address?" of a
    server that took the call (here its ``Health`` answered)."""
    with hung_server(health_hangs=False, opens=opens) as (address, _):
        cli = ["draft", "--server", address, "--draft", "ngram", "--prompt-ids", "5,6,7",
               "--max-new-tokens", "4", "--request-timeout-s", "1",
               "--retry-timeout-s", "1"]  # fmt: skip
        assert main(cli) == 1
    assert capsys.readouterr().err.splitlines()[-1] == DEADLINE_LINE


def test_the_deadline_hint_names_each_commands_flag() -> None:
    error = RequestError(ErrorCode.UNAVAILABLE, "Deadline Exceeded")
    assert error.client_line("drafting-server").endswith(
        "a long prompt's first (raise --timeout-s to wait for it))"
    )
    assert error.client_line("bench serve").endswith(
        "a long prompt's first (a longer deadline to wait for it))"
    )
    refused = RequestError(ErrorCode.UNAVAILABLE, "failed to connect to all addresses")
    assert refused.client_line("draft").endswith(
        "(is an `edgespec serve` running and reachable at the --server address?)"
    )
