"""gRPC's own log lines: every ``edgespec`` command runs with ``GRPC_VERBOSITY=ERROR`` unless
the user set it, so a client whose idle connection the server closed does not print gRPC's
INFO line ``Got goaway [2] err=UNAVAILABLE:GOAWAY received ... connection idle`` (the
endpoint did, after its server's idle timeout: an operator reads an outage).

This module is also that client, as a command of its own (:func:`add_arguments`,
:func:`run`) that a child interpreter registers and runs through ``edgespec.cli.main``:
gRPC reads the variable when it is imported, so only a fresh process shows what ``main``
does before grpc loads."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from edgespec.cli import quiet_grpc_logs

ROOT = Path(__file__).resolve().parent.parent
IDLE_MS = 100
"""The server's ``grpc.max_connection_idle_ms``: it sends GOAWAY after this much idleness."""

GOAWAY = "Got goaway [2] err=UNAVAILABLE:GOAWAY received"

_CHILD = """
import sys
from edgespec import cli
cli.SUBCOMMANDS["goaway"] = "one call, then the connection left idle until the server closes it"
cli.COMMAND_MODULES["goaway"] = "tests.test_grpc_logs"
sys.exit(cli.main(["goaway"]))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The child's ``goaway`` command takes no flags."""


def run(args: argparse.Namespace) -> int:
    """One call to a server that closes connections idle for :data:`IDLE_MS`, then wait
    (10 s at most) until the client's channel has seen that GOAWAY and gone idle."""
    from concurrent import futures

    import grpc

    echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=1),
        options=[("grpc.max_connection_idle_ms", IDLE_MS)],
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"E": echo}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    went_idle = threading.Event()
    states: list[grpc.ChannelConnectivity] = []

    def seen(state: grpc.ChannelConnectivity) -> None:
        states.append(state)
        if state == grpc.ChannelConnectivity.IDLE and grpc.ChannelConnectivity.READY in states:
            went_idle.set()

    channel.subscribe(seen)
    channel.unary_unary("/t.T/E")(b"x", timeout=10)
    closed = went_idle.wait(10)
    channel.close()
    server.stop(None)
    print("closed by the server" if closed else "still open", flush=True)
    return 0 if closed else 1


def _goaway_client(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
        env=environ,
    )
    assert (done.returncode, done.stdout) == (0, "closed by the server\n"), done.stderr
    return done


def _environ_without_grpc_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GRPC_")}


def test_an_idle_connection_closed_by_the_server_prints_no_grpc_line() -> None:
    done = _goaway_client(_environ_without_grpc_settings())
    assert done.stderr == ""


def test_a_grpc_verbosity_the_user_set_is_kept() -> None:
    """``GRPC_VERBOSITY=INFO`` brings gRPC's own lines back (docs/DEPLOY.md, step 3)."""
    done = _goaway_client({**_environ_without_grpc_settings(), "GRPC_VERBOSITY": "INFO"})
    assert GOAWAY in done.stderr
    assert "connection idle" in done.stderr


@pytest.mark.parametrize(
    ("given", "after"),
    [
        ({}, {"GRPC_VERBOSITY": "ERROR"}),
        ({"GRPC_VERBOSITY": ""}, {"GRPC_VERBOSITY": "ERROR"}),
        ({"GRPC_VERBOSITY": "INFO"}, {"GRPC_VERBOSITY": "INFO"}),
        ({"GRPC_VERBOSITY": "DEBUG", "GRPC_TRACE": "http"},
         {"GRPC_VERBOSITY": "DEBUG", "GRPC_TRACE": "http"}),
    ],
)  # fmt: skip
def test_errors_only_unless_the_user_set_a_verbosity(
    given: dict[str, str], after: dict[str, str]
) -> None:
    environ = dict(given)
    quiet_grpc_logs(environ)
    assert environ == after
