"""A verify call that outlives ``request_timeout_s`` on a server busy with its pass (a long
prompt's first, as the real Gemma target's 3,500-token prefill on 2 cores, 60 s against
the default 30 s) is sent again, identical, on the same session, and the server takes the
resend over with the pass, or the prefill parts, it runs for it: the generation finishes
with the prompt forwarded once. It used to close the session and fail (a call past its
deadline came after ``retry_timeout_s``), or, given a longer retry window, reopen the
session and prefill the prompt again. Past the progress budget's time the generation gives
up and closes its session: the server holds it, and its KV, until then; a silent server
gets the close too."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.draft_run import DraftRun
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.progress import NoProgress, ProgressBudget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.wire.drafter_clients import drafter_clients
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.hung_server import VOCAB_SIZE, assert_deadlines, hung_server, hung_servicer
from tests.runtime.wrapped_target import SlowPasses

LONG = tuple((7 * i + 3) % 64 for i in range(40))
MAX_NEW = 12


def _generate(port: int, prompt: tuple[int, ...], progress_s: float = 60.0) -> Any:
    """A greedy generation of ``prompt`` (n-gram draft, γ 4) whose calls time out after
    0.5 s: its result and the resends it was told of, or the error it raised."""
    told: list[tuple[ErrorCode, int]] = []
    options = DraftOptions("s", progress=ProgressBudget(timeout_s=progress_s),
                           on_resend=lambda exc, n, _: told.append((exc.code, n)))  # fmt: skip
    verifier = RemoteVerifier(f"127.0.0.1:{port}", timeout_s=0.5)
    try:
        sampling = SamplingParams(max_new_tokens=MAX_NEW)
        result = generate(verifier, NgramDrafter(), prompt, sampling, options, StaticWindow(4))
    except RequestError as exc:
        return exc, told
    return result, told


def test_a_first_round_past_the_deadline_is_answered_from_its_one_pass(
    target: TransformersTarget,
) -> None:
    slow = SlowPasses(target, first_s=1.6)
    server = start_server(slow)  # type: ignore[arg-type]
    try:
        result, told = _generate(server.port, LONG)
    finally:
        server.stop()
    assert isinstance(result, GenerationResult)
    assert result.output_token_ids == target_greedy_decode(target, LONG, MAX_NEW)
    assert result.num_resends == len(told) >= 2  # at 0.5 s, 1 s, (1.5 s) into the pass
    assert told[0] == (ErrorCode.UNAVAILABLE, 0)
    assert result.num_reconnects == 0
    assert slow.passes[0] == [len(LONG) + 4]
    assert max(max(p) for p in slow.passes[1:]) <= 5  # no pass forwarded the prompt again


def test_a_long_prompts_parts_are_kept_across_resends(target: TransformersTarget) -> None:
    """Parts of 8 tokens, each pass 0.3 s: the first round's six passes take 1.8 s, its
    call is sent again three times, and the prompt is forwarded once."""
    slow = SlowPasses(target, each_s=0.3)
    server = start_server(slow, prefill_part_tokens=8)  # type: ignore[arg-type]
    try:
        result, told = _generate(server.port, LONG)
        assert server.service is not None
        stats = server.service.engine.counters()
    finally:
        server.stop()
    assert isinstance(result, GenerationResult)
    assert result.output_token_ids == target_greedy_decode(target, LONG, MAX_NEW)
    assert result.num_resends == len(told) >= 2
    assert slow.passes[:6] == [[8], [8], [8], [8], [7], [5]]
    assert (stats.num_prefill_parts, stats.num_cache_misses) == (5, 1)


def test_a_session_left_busy_past_the_progress_budget_is_closed(
    target: TransformersTarget,
) -> None:
    slow = SlowPasses(target, first_s=2.5)
    server = start_server(slow)  # type: ignore[arg-type]
    try:
        error, told = _generate(server.port, (5, 6, 7), progress_s=1.2)
        assert slow.done.wait(10)
        service = server.service
        assert service is not None
        deadline = time.monotonic() + 5
        while service.stats().num_sessions and time.monotonic() < deadline:
            time.sleep(0.05)  # the pass's end answers the close
        assert service.stats().num_sessions == 0  # was 1 until session_timeout_s
    finally:
        server.stop()
    assert isinstance(error, NoProgress)
    assert error.message == (
        "gave up after 1.2 s without a committed token (0 committed; last error "
        "UNAVAILABLE: Deadline Exceeded)"
    )
    assert len(told) == 2  # at 0.5 s and 1 s; at 1.5 s the budget was out


def _run(address: str) -> RequestError:
    """A distributed run against ``address`` giving up after 1 s: what it raised."""
    config = from_dict(DrafterConfig, {"server": address, "draft": "ngram",
                                       "request_timeout_s": 0.4, "progress_timeout_s": 1.0,
                                       "retry_timeout_s": 1.0})  # fmt: skip
    (verifier,) = drafter_clients(config)
    run = DraftRun(config, verifier, (5, 6, 7), None, None)
    with pytest.raises(RequestError) as info:
        run.distributed(None, VOCAB_SIZE, StaticWindow(4), None, False)
    return info.value


def test_the_close_is_sent_to_a_silent_server_too(capsys: pytest.CaptureFixture[str]) -> None:
    with hung_server(health_hangs=False, opens=True) as (address, calls):
        error = _run(address)
    assert isinstance(error, NoProgress)
    assert calls == ["OpenSession", "Verify", "Verify", "Verify", "CloseSession"]
    lines = [re.sub(r"up to \d+ s", "up to N s", line)
             for line in capsys.readouterr().err.splitlines()]  # fmt: skip
    assert lines == [
        "edgespec draft: no answer within the call's deadline (UNAVAILABLE: Deadline "
        "Exceeded; --request-timeout-s) after 0 tokens: the server is busy, with a long "
        "prompt's first pass, say; sending the same block again on the same session (the "
        "server keeps its work), for up to N s more (--progress-timeout-s)",
        "edgespec draft: still no answer: sending it again, for up to N s more "
        "(--progress-timeout-s)",
    ]


def test_the_last_sending_waits_only_what_is_left_of_the_progress_time() -> None:
    """Calls of 2 s against a progress time of 2.5 s on a silent server: the resend waits
    0.5 s and the generation gives up at 2.5 s, not 4 s (a whole request timeout)."""
    with hung_servicer(health_hangs=False, opens=True) as (address, servicer):
        verifier = RemoteVerifier(address, timeout_s=2.0, close_timeout_s=0.2)
        options = DraftOptions("s", progress=ProgressBudget(timeout_s=2.5))
        sampling = SamplingParams(max_new_tokens=4)
        start = time.monotonic()
        try:
            with pytest.raises(NoProgress, match="gave up after 2.5 s"):
                generate(verifier, NgramDrafter(), (5, 6, 7), sampling, options, StaticWindow(4))
            took_s = time.monotonic() - start
        finally:
            verifier.close_channel()
    assert servicer.calls == ["OpenSession", "Verify", "Verify", "CloseSession"]
    assert_deadlines(servicer, (2.0, 2.0, 0.5, 0.2))  # the resend: what is left of 2.5 s
    assert 2.5 <= took_s < 4.0  # it took 4 s and more: a whole call for the resend
