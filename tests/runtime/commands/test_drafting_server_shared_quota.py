"""Drafting servers that share an auth token share one session quota: with auth on, the
server counts ``max_sessions_per_client`` per token, whatever ``--client-id`` each process
opens under. ``drafting-server --help`` and docs/DEPLOY.md said each process had a quota of
its own."""

from __future__ import annotations

import argparse
from pathlib import Path

from edgespec.runtime.commands.drafting_server_arguments import add_arguments
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.bad_cases import GREEDY, PROMPT, raises_request_error
from tests.runtime.conftest import ServerFactory

ROOT = Path(__file__).resolve().parents[3]


def test_processes_sharing_a_token_share_its_quota(make_server: ServerFactory) -> None:
    server = make_server(auth_tokens=["tok"], max_sessions_per_client=2)
    address = f"127.0.0.1:{server.port}"
    first, second = (RemoteVerifier(address, auth_token="tok") for _ in range(2))
    for index in range(2):
        first.open(SessionSpec(f"a-{index}", "drafting-server-1-aaaaaaaa", PROMPT, GREEDY))
    raises_request_error(
        ErrorCode.RESOURCE_EXHAUSTED,
        "this token already has 2 open sessions (max_sessions_per_client)",
        second.open,
        SessionSpec("b-0", "drafting-server-2-bbbbbbbb", PROMPT, GREEDY),
    )


def test_the_help_and_the_deploy_guide_say_a_token_shares_one_quota() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (client_id,) = (a for a in parser._actions if "--client-id" in a.option_strings)
    assert str(client_id.help).endswith(
        "which the server's per-client session quota counts when it has no auth; with auth "
        "it counts per --auth-token, so processes sharing a token share one quota"
    )
    deploy = " ".join((ROOT / "docs" / "DEPLOY.md").read_text().split())
    assert "each process has a quota of its own" not in deploy
    assert (
        "with auth it counts per token, so processes sharing a token share one quota "
        "(`RESOURCE_EXHAUSTED: this token already has 8 open sessions "
        "(max_sessions_per_client)`)"
    ) in deploy
