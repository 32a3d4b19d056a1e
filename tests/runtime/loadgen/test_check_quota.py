"""``bench serve``'s centralized check decodes its references as one client
(``bench-reference``): at most the server's ``max_sessions_per_client`` at once (its Health
says it), not 8 whatever the quota (a server allowing 4 refused the check with
RESOURCE_EXHAUSTED after the whole load ran), asked again while sessions the load left
take the quota; a check that fails all the same keeps the load's report, written before
the bench fails with one line."""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.bench_serve import _report
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.loadgen.check import CheckResult, centralized_outputs
from edgespec.runtime.loadgen.report import LoadReport, run_metrics
from edgespec.runtime.loadgen.spec import ServerAccess
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory
from tests.runtime.greedy_oracles import penalized_greedy
from tests.runtime.loadgen.test_check_and_report import _outcome

FIVE = SamplingParams(max_new_tokens=5)


def test_the_check_keeps_within_the_servers_per_client_quota(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server(max_sessions_per_client=4)
    prompts = [tuple(range(1 + k, 6 + k)) for k in range(8)]
    refs = centralized_outputs(ServerAccess(f"127.0.0.1:{server.port}"), prompts,
                               list(range(8)), SamplingParams(max_new_tokens=6), "default",
                               "TAG")  # fmt: skip
    assert refs == {k: tuple(target_greedy_decode(target, prompts[k], 6)) for k in range(8)}


def test_the_references_are_penalized_as_the_loads_requests(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """A penalized load's references are the target's penalized greedy output; a sampled
    load has none."""
    server = make_server()
    access, prompts = ServerAccess(f"127.0.0.1:{server.port}"), [(3, 4, 5, 3, 4)]
    sampling = SamplingParams(max_new_tokens=8, repetition_penalty=1.6, frequency_penalty=0.4)
    refs = centralized_outputs(access, prompts, [0], sampling, "default", "TAG")
    expected = penalized_greedy(target, prompts[0], (1.6, 0.4, 0.0), 8)
    assert refs == {0: expected} and expected != tuple(target_greedy_decode(target, prompts[0], 8))
    with pytest.raises(ValueError, match="a sampled load has no centralized output"):
        centralized_outputs(access, prompts, [0], SamplingParams(temperature=1.0), "default", "T")


def test_a_failed_check_keeps_the_report_then_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = _outcome()
    failed = CheckResult(2, 0, (), "RESOURCE_EXHAUSTED: client_id 'bench-reference' already "
                         "has 4 open sessions (max_sessions_per_client)")  # fmt: skip
    report = LoadReport({"mode": "distributed"}, outcome, run_metrics(outcome), failed, 0, None,
                        "faults")  # fmt: skip
    args = argparse.Namespace(json=tmp_path / "bench.json")
    assert _report(args, ("distributed",), (report,)) == 1
    written = json.loads((tmp_path / "bench.json").read_text())
    assert written["runs"][0]["check"]["failure"] == failed.failure
    assert written["runs"][0]["requests"]["finished"] == 2  # the load's report is whole
    out, err = capsys.readouterr()
    assert f"centralized check: **failed** ({failed.failure})" in out
    assert err.endswith(f"edgespec bench serve: distributed: the centralized check failed: "
                        f"{failed.failure}\n")  # fmt: skip


def _hold(server_port: int, count: int) -> tuple[RemoteVerifier, list[str]]:
    """``count`` sessions open under the references' client id, as a load's leftovers."""
    holder = RemoteVerifier(f"127.0.0.1:{server_port}", timeout_s=5.0)
    ids = [f"left-{k}" for k in range(count)]
    for session_id in ids:
        holder.open(SessionSpec(session_id, "bench-reference", (1, 2, 3), SamplingParams()))
    return holder, ids


def test_the_check_waits_for_sessions_the_load_left_to_free_the_quota(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """The quota full of the load's sessions (under auth they and the references are one
    client): the references are asked again until those close, not failed at once."""
    server = make_server(max_sessions_per_client=2)
    holder, ids = _hold(server.port, 2)

    def close_them() -> None:
        for session_id in ids:
            holder.close(session_id)

    closing = threading.Timer(1.0, close_them)
    closing.start()
    try:
        start_s = time.monotonic()
        refs = centralized_outputs(ServerAccess(f"127.0.0.1:{server.port}"), [(4, 5, 6)], [0],
                                   FIVE, "default", "TAG", quota_wait_s=30.0)  # fmt: skip
    finally:
        closing.join()
        holder.close_channel()
    assert refs == {0: tuple(target_greedy_decode(target, (4, 5, 6), 5))}
    assert 1.0 <= time.monotonic() - start_s < 10.0


def test_the_check_fails_with_the_quota_once_its_wait_is_over(
    make_server: ServerFactory,
) -> None:
    server = make_server(max_sessions_per_client=1)
    holder, ids = _hold(server.port, 1)
    try:
        start_s = time.monotonic()
        with pytest.raises(RequestError) as raised:
            centralized_outputs(ServerAccess(f"127.0.0.1:{server.port}"), [(4, 5, 6)], [0], FIVE,
                                "default", "TAG", quota_wait_s=2.0)  # fmt: skip
        assert 1.0 <= time.monotonic() - start_s < 5.0
    finally:
        holder.close(ids[0])
        holder.close_channel()
    assert raised.value.code is ErrorCode.RESOURCE_EXHAUSTED
    assert "bench-reference" in raised.value.message
