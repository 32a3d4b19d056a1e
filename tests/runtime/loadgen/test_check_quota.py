"""``bench serve``'s centralized check decodes its references as one client
(``bench-reference``): at most the server's ``max_sessions_per_client`` at once (its Health
says it), not 8 whatever the quota (a server allowing 4 refused the check with
RESOURCE_EXHAUSTED after the whole load ran); a check that fails all the same keeps the
load's report, written before the bench fails with one line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.bench_serve import _report
from edgespec.runtime.loadgen.check import CheckResult, centralized_outputs
from edgespec.runtime.loadgen.report import LoadReport, run_metrics
from edgespec.runtime.loadgen.spec import ServerAccess
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory
from tests.runtime.loadgen.test_check_and_report import _outcome


def test_the_check_keeps_within_the_servers_per_client_quota(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server(max_sessions_per_client=4)
    prompts = [tuple(range(1 + k, 6 + k)) for k in range(8)]
    refs = centralized_outputs(ServerAccess(f"127.0.0.1:{server.port}"), prompts,
                               list(range(8)), 6, "default", "TAG")  # fmt: skip
    assert refs == {k: tuple(target_greedy_decode(target, prompts[k], 6)) for k in range(8)}


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
