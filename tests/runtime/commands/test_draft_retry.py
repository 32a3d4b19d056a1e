"""``edgespec draft``'s one prompt: a session lost to a server gone down is reopened for
``retry_timeout_s`` (``--retry-timeout-s``; it was always DraftOptions' 30 s), while the
first open still fails at once (a user running ``edgespec draft`` against no server hears
it now); a timeout that is not a finite number > 0 is refused naming the flag or field.
The endpoint's retries: tests/runtime/openai_api/test_unreachable_at_open.py."""

from __future__ import annotations

import time

import pytest

from edgespec.cli import main
from edgespec.config import from_dict
from edgespec.policies.window import StaticWindow
from edgespec.runtime.commands.draft_run import DraftRun
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply

RETRY_TIMEOUT_S = 0.3


def _down() -> RequestError:
    return RequestError(ErrorCode.UNAVAILABLE, "failed to connect to all addresses")


class GoesDown:
    """A server that opens the first session (unless ``down_at_first``) and is then down:
    every verification and every other open fails ``UNAVAILABLE``."""

    def __init__(self, down_at_first: bool) -> None:
        self.down_at_first = down_at_first
        self.opens = 0

    def open(self, spec: SessionSpec) -> None:
        self.opens += 1
        if self.down_at_first or self.opens > 1:
            raise _down()

    def verify(self, call: VerifyCall) -> VerifyReply:
        raise _down()

    def close(self, session_id: str) -> None:
        raise _down()


def _run(verifier: GoesDown, **fields: float) -> float:
    """Seconds until the one prompt's distributed run failed with ``UNAVAILABLE``."""
    config = from_dict(DrafterConfig, {"server": "127.0.0.1:1", **fields})
    run = DraftRun(config, verifier, (5, 6, 7, 5, 6), None, None)
    start = time.monotonic()
    with pytest.raises(RequestError) as info:
        run.distributed(None, 64, StaticWindow(4), None, False)
    assert info.value.code is ErrorCode.UNAVAILABLE
    return time.monotonic() - start


def test_a_lost_session_is_reopened_for_the_retry_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    verifier = GoesDown(down_at_first=False)
    took = _run(verifier, retry_timeout_s=RETRY_TIMEOUT_S)
    assert RETRY_TIMEOUT_S <= took < RETRY_TIMEOUT_S + 2  # was 30 s, whatever the config
    assert verifier.opens > 2  # reopened every backoff (50 ms) meanwhile
    assert capsys.readouterr().err.splitlines() == [  # it was silent meanwhile
        f"edgespec draft: the session was lost ({_down()}) after 0 tokens: reopening it with "
        f"them, retried for up to {RETRY_TIMEOUT_S:g} s (--retry-timeout-s)"
    ]


def test_the_first_open_still_fails_at_once() -> None:
    verifier = GoesDown(down_at_first=True)
    assert _run(verifier, retry_timeout_s=30.0) < 1.0
    assert verifier.opens == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--retry-timeout-s", "0"], "--retry-timeout-s: must be a finite number > 0, got 0.0"),
        (["--set", "retry_timeout_s=-1"],
         "config field 'retry_timeout_s': must be a finite number > 0, got -1.0"),
    ],
)  # fmt: skip
def test_a_retry_timeout_not_above_0_exits_2(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before any server is reached (none listens at 127.0.0.1:1: that would be exit 1)."""
    argv = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram", "--prompt-ids", "1"]
    assert main([*argv, *flags]) == 2
    assert capsys.readouterr().err == f"edgespec draft: {message}\n"
