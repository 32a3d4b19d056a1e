"""A drafting-server verify call past ``--timeout-s`` (a batch of long prompts' first
pass on a busy server) is sent again, identical: the server takes each resend over with
the pass it runs for the batch, so the run finishes with every prompt forwarded once and
the target's greedy tokens. Past ``progress_timeout_s`` from its first sending a call
fails the run, as any other error does (its sessions closed). ``edgespec drafting-server``
counts the resends in its stats line and JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.batched_draft import BatchedDraftModel
from edgespec.runtime.edge.drafting_server import run_drafting_server
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.hung_server import assert_deadlines, hung_servicer
from tests.runtime.stage_lines import without_stages
from tests.runtime.wrapped_target import SlowPasses

PROMPTS = [tuple((7 * i + k) % 64 for i in range(30)) for k in range(4)]
MAX_NEW = 8


@pytest.mark.parametrize("pipelined", [False, True])
def test_calls_past_the_timeout_are_resent_and_answered_from_the_one_pass(
    target: TransformersTarget, batched: BatchedDraftModel, pipelined: bool
) -> None:
    slow = SlowPasses(target, first_s=1.6)
    server = start_server(slow, group_wait_s=5.0)  # type: ignore[arg-type]
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}", timeout_s=0.5)
    try:
        result = run_drafting_server(
            verifier, batched, PROMPTS, batch_size=2, gamma=3, max_new_tokens=MAX_NEW,
            pipelined=pipelined, progress_timeout_s=30.0,
        )  # fmt: skip
    finally:
        verifier.close_channel()
        server.stop(grace_s=0)
    assert result.output_token_ids == tuple(
        target_greedy_decode(target, p, MAX_NEW) for p in PROMPTS
    )
    assert result.num_resends >= 2  # both calls of the first batch, at least once
    assert slow.passes[0] == [30 + 3, 30 + 3]  # the first batch: two prompts and drafts
    prompt_passes = [p for p in slow.passes if max(p) >= 30]
    assert len(prompt_passes) == 2  # each prompt forwarded once: one pass per batch
    assert result.summary()["num_resends"] == result.num_resends


def test_a_call_unanswered_past_the_progress_time_fails_the_run(
    target: TransformersTarget, batched: BatchedDraftModel
) -> None:
    slow = SlowPasses(target, first_s=2.5)
    server = start_server(slow)  # type: ignore[arg-type]
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}", timeout_s=0.4)
    try:
        with pytest.raises(RequestError) as info:
            run_drafting_server(
                verifier, batched, PROMPTS[:1], batch_size=1, gamma=3, max_new_tokens=MAX_NEW,
                pipelined=False, progress_timeout_s=1.0,
            )  # fmt: skip
        slow.done.wait(5.0)
        stats = verifier.stats()
    finally:
        verifier.close_channel()
        server.stop(grace_s=0)
    assert info.value.code is ErrorCode.UNAVAILABLE and info.value.past_deadline
    assert stats.num_sessions == 0  # closed when the run failed


def test_no_sending_waits_past_the_progress_time(batched: BatchedDraftModel) -> None:
    """Calls of 2 s against a progress time of 2.5 s on a silent server: the resend waits
    0.5 s and the run fails at 2.5 s, not 4 s (a whole ``--timeout-s``)."""
    with hung_servicer(health_hangs=False, opens=True) as (address, servicer):
        verifier = RemoteVerifier(address, timeout_s=2.0, close_timeout_s=0.2)
        start = time.monotonic()
        try:
            with pytest.raises(RequestError) as info:
                run_drafting_server(
                    verifier, batched, PROMPTS[:1], batch_size=1, gamma=3,
                    max_new_tokens=MAX_NEW, pipelined=False, progress_timeout_s=2.5,
                )  # fmt: skip
            took_s = time.monotonic() - start
        finally:
            verifier.close_channel()
    assert info.value.past_deadline
    assert servicer.calls == ["OpenSession", "Verify", "Verify", "CloseSession"]
    assert_deadlines(servicer, (2.0, 2.0, 0.5, 0.2))  # the resend: what is left of 2.5 s
    assert 2.5 <= took_s < 4.0  # it took 4 s and more: a whole call for the resend


def test_the_command_counts_the_calls_it_sent_again(
    target: TransformersTarget, draft_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Every pass 0.4 s against a 0.3 s ``--timeout-s``: the run finishes, its stats line
    and JSON count the resends, and the JSON keeps both timeouts."""
    server = start_server(SlowPasses(target, each_s=0.4))  # type: ignore[arg-type]
    out = tmp_path / "ds.json"
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--batch-size", "2", "--gamma", "3"]
    argv += ["--max-new-tokens", "4", "--no-pipeline", "--timeout-s", "0.3"]
    argv += ["--progress-timeout-s", "20", "--json", str(out)]
    try:
        assert main(argv) == 0
    finally:
        server.stop(grace_s=0)
    report = json.loads(out.read_text())
    resends = report["runs"]["not_pipelined"]["num_resends"]
    assert resends >= 2  # the first batch's two calls, at least
    err = without_stages(capsys.readouterr().err).splitlines()
    line = [x for x in err if "[not" in x]
    assert line[0].endswith(f"; {resends} calls sent again past --timeout-s]")
    told = [x for x in err if "no answer within --timeout-s" in x]
    assert (
        told
        == [  # once a run: the warm-up's, then the timed run's
            "edgespec drafting-server: no answer within --timeout-s (UNAVAILABLE: Deadline "
            "Exceeded): the server is busy, with a batch of long prompts' first pass, say; "
            "sending the calls again on their sessions (the server keeps its work), each for up "
            "to 20 s from its first sending (--progress-timeout-s)"
        ]
        * 2
    )
    assert (report["settings"]["timeout_s"], report["settings"]["progress_timeout_s"]) == (0.3, 20)
