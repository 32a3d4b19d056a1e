"""``edgespec drafting-server``'s bounded flags (token ids and ``--max-new-tokens`` within the
wire's uint32, ``--timeout-s``, ``--client-id`` and its per-process default), checked
before the server is asked or the draft loads; the gRPC client's own refusal of ids and
budgets the wire cannot carry; ``--timeout-s`` and the short close deadline reaching the
client; ``--prompts`` naming every set there is."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.argument_types import token_ids
from edgespec.cli import main
from edgespec.core.types import SamplingParams
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.grpc_client import RemoteVerifier

CLI = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "somewhere"]

SUFFIX_TOLD = ("its session ids' '-<8 hex>-<index>' add up to 15 to it, and a session id has "
               "at most 128")  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-new-tokens", str(2**32)],
         f"config field 'max_new_tokens': must be below 2**32 (the wire's uint32), got {2**32}"),
        (["--timeout-s", "0"], "config field 'timeout_s': must be in (0, 86400], got 0"),
        (["--timeout-s", "-1"], "config field 'timeout_s': must be in (0, 86400], got -1"),
        (["--timeout-s", "nan"], "config field 'timeout_s': must be in (0, 86400], got nan"),
        (["--timeout-s", "inf"], "config field 'timeout_s': must be in (0, 86400], got inf"),
        (["--timeout-s", "1e9"], "config field 'timeout_s': must be in (0, 86400], got 1e+09"),
        (["--progress-timeout-s", "0"],
         "config field 'progress_timeout_s': must be in (0, 86400], got 0"),
        (["--progress-timeout-s", "nan"],
         "config field 'progress_timeout_s': must be in (0, 86400], got nan"),
        (["--client-id", ""], f"config field 'client_id': must be 1 to 113 characters, got 0: "
         f"{SUFFIX_TOLD}"),
        (["--client-id", "c" * 114],  # its 113 + '-<8 hex>-65535': 128
         f"config field 'client_id': must be 1 to 113 characters, got 114: {SUFFIX_TOLD}"),
        (["--num-sessions", "65537"], "config field 'num_sessions': must be <= 65,536, got 65537"),
        (["--batch-size", "257"],  # 300 had some of a batch's calls refused REFUSED_STREAM
         "config field 'batch_size': must be <= 256, the calls one gRPC connection carries at "
         "once (a batch's go out together), got 257"),
        (["--prompt-ids", "1,2", "--prompt-ids", "3", "--num-sessions", "3"],
         "config field 'num_sessions': the sessions are the --prompt-ids given (one each): "
         "drop --num-sessions"),
        (["--prompt-ids", "1,2", "--split", "train"],
         "config field 'split': the prompts are the --prompt-ids given, not a dataset's: "
         "drop --split"),
    ],
)  # fmt: skip
def test_out_of_range_flags_are_one_line_before_the_server_is_asked(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*CLI, *flags]) == 2
    assert capsys.readouterr().err == f"edgespec drafting-server: {message}\n"


def test_a_progress_budget_below_the_timeout_is_said_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Said before anything else can fail (here the plan it then looks for)."""
    assert main([*CLI, "--progress-timeout-s", "2", "--timeout-s", "5", "--plan", "nosuch"]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first == ("edgespec drafting-server: warning: --progress-timeout-s 2 is below "
                     "--timeout-s 5: a verification call slower than 2 s gives its request up, "
                     "and --timeout-s never applies")  # fmt: skip


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (f"1,{2**32}", f"token 1 (id {2**32}) is over 2**32 - 1, the largest id the wire carries"),
        (f"{2**64},3", f"token 0 (id {2**64}) is over 2**32 - 1, the largest id the wire carries"),
    ],
)
def test_token_ids_over_the_wires_uint32_are_usage_errors(
    ids: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*CLI, "--prompt-ids", ids])
    assert stop.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"edgespec drafting-server: error: argument --prompt-ids: {message}"
    assert token_ids(f"0,{2**32 - 1}") == (0, 2**32 - 1)


def _spec(prompt: tuple[int, ...], max_new_tokens: int = 4) -> SessionSpec:
    return SessionSpec("s", "c", prompt, SamplingParams(max_new_tokens=max_new_tokens))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_spec((1, 2**32)),
         f"prompt token 1 (id {2**32}) is outside [0, 2**32), the ids the wire carries (uint32)"),
        (_spec((-1,)),
         "prompt token 0 (id -1) is outside [0, 2**32), the ids the wire carries (uint32)"),
        (_spec((1,), 2**32),
         f"max_new_tokens {2**32} is outside [0, 2**32), what the wire carries (uint32)"),
    ],
)  # fmt: skip
def test_the_client_refuses_what_the_wire_cannot_carry(spec: SessionSpec, message: str) -> None:
    client = RemoteVerifier("127.0.0.1:1")  # refused before anything is sent
    try:
        for call in (client.open, lambda s: next(client.generate(s))):
            with pytest.raises(RequestError) as refused:
                call(spec)
            assert (refused.value.code, refused.value.message) == (
                ErrorCode.INVALID_ARGUMENT,
                message,
            )
    finally:
        client.close_channel()


def test_the_default_client_id_is_this_process_and_run_alone() -> None:
    from edgespec.runtime.commands.drafting_server_arguments import default_client_id

    first, second = default_client_id(), default_client_id()
    assert re.fullmatch(r"drafting-server-\d+-[0-9a-f]{8}", first) and first != second


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An address that accepts TCP connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_timeout_s_bounds_every_request(
    silent_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.monotonic()
    argv = ["drafting-server", "--server", silent_server, "--draft", "x", "--timeout-s", "0.5"]
    assert main(argv) == 1
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err
    assert err.startswith("edgespec drafting-server: UNAVAILABLE: ") and err.count("\n") == 1


def test_a_close_has_its_own_deadline(silent_server: str) -> None:
    client = RemoteVerifier(silent_server, timeout_s=30.0, close_timeout_s=0.3)
    start = time.monotonic()
    try:
        with pytest.raises(RequestError) as failed:
            client.close("s")
    finally:
        client.close_channel()
    assert failed.value.code is ErrorCode.UNAVAILABLE and time.monotonic() - start < 5


@pytest.mark.parametrize("command", [["drafting-server", "--draft", "d"], ["bench", "serve"]])
def test_a_server_address_with_a_scheme_is_a_usage_error(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """http://127.0.0.1:1 was taken, then failed in gRPC ("Misformatted domain name")."""
    with pytest.raises(SystemExit) as exited:
        main([*command, "--server", "http://127.0.0.1:1"])
    assert exited.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(
            "error: argument --server: expected host:port without a scheme, path or user (gRPC "
            "speaks to host:port itself), got 'http://127.0.0.1:1'"
        )
    )


class _Applied(Exception):
    """Raised where the draft would load: the flags reached the process's settings."""


def test_cpus_and_threads_reach_the_process_before_the_draft_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--cpus`` was refused ("unrecognized arguments"): the drafting server shares a
    machine with the verification server as the drafter does, and takes CPUs the same way."""
    from edgespec.runtime.commands import drafting_server
    from edgespec.runtime.wire import grpc_client

    class Server:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def max_draft_tokens(self) -> None:
            return None

    applied: list[tuple[tuple[int, ...] | None, int | None]] = []

    def apply(cpus: tuple[int, ...] | None, threads: int | None) -> None:
        applied.append((cpus, threads))
        raise _Applied

    monkeypatch.setattr(grpc_client, "RemoteVerifier", Server)
    monkeypatch.setattr(drafting_server, "apply_cpus_and_threads", apply)
    with pytest.raises(_Applied):
        main([*CLI, "--cpus", "0", "--threads", "2"])
    with pytest.raises(_Applied):
        main([*CLI, "--cpus", "0"])
    assert applied == [((0,), 2), ((0,), None)]


def test_prompts_names_every_set_and_refuses_others_as_the_flags_are_parsed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Its help listed gsm8k, cnndm, humaneval and general, not sharegpt, which it takes; a
    set of no known name was refused once the draft had loaded."""
    with pytest.raises(SystemExit):
        main(["drafting-server", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert ("--prompts SET prompt dataset, one prompt per session (gsm8k, cnndm, humaneval, "
            "sharegpt, general; default gsm8k;") in help_text  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main([*CLI, "--prompts", "nosuch"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec drafting-server: error: argument --prompts: invalid choice: 'nosuch' (choose "
        "from 'gsm8k', 'cnndm', 'humaneval', 'sharegpt', 'general')"
    )


def test_a_pipelined_run_over_one_connections_streams_is_refused() -> None:
    """Pipelined, every batch in flight sends on one connection (256 streams): 600 sessions
    in batches of 200 had 600 calls in flight, some refused UNAVAILABLE, and the run failed
    as if no server were there (a review); without pipelining a batch's calls are bounded by
    --batch-size's own check."""
    import argparse

    from edgespec.config import ConfigError
    from edgespec.runtime.commands.drafting_server_plan import check_pipelined_calls

    def args(num_sessions: int, pipeline: bool | None, compare: bool = False) -> Any:
        return argparse.Namespace(num_sessions=num_sessions, pipeline=pipeline, compare=compare)

    for refused in (args(257, None), args(600, True), args(300, None, compare=True)):
        with pytest.raises(ConfigError) as info:
            check_pipelined_calls(refused, None)
        assert str(info.value) == (
            f"config field 'num_sessions': must be <= 256 pipelined, the calls one gRPC "
            f"connection carries at once (every batch in flight sends on it), got "
            f"{refused.num_sessions}: give --no-pipeline"
        )
    check_pipelined_calls(args(256, None), None)
    check_pipelined_calls(args(600, False), None)
