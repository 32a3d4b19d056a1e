"""``bench serve --server`` across a restart of that server by hand (docs/DEPLOY.md step 8):
a new server process counts from 0, so its counters' "increase" over the run was negative
and every row read **no**. The counters are not compared then, saying why, as after the
bench's own restart-server fault; nor when the clients reconnected."""

from __future__ import annotations

import argparse
from pathlib import Path

from edgespec.core.types import RequestRecord
from edgespec.runtime.loadgen.messages import Finished
from edgespec.runtime.loadgen.outcome import RunOutcome
from edgespec.runtime.loadgen.report import LoadReport, markdown
from edgespec.runtime.loadgen.session import BenchSession
from edgespec.runtime.loadgen.spec import LoadSpec, SloShare

LOAD = LoadSpec(2, 2, "closed", None, 20.0, 60.0, (SloShare("default", None, 1.0),), 16, 4,
                "ngram", 0)  # fmt: skip


def _args() -> argparse.Namespace:
    return argparse.Namespace(metrics_url="http://127.0.0.1:9/metrics", target="synthetic",
                              server="127.0.0.1:50461", draft="ngram", no_check=True,
                              backend="transformers", prompts="gsm8k", faults=None)  # fmt: skip


def _outcome(reconnects: int = 0) -> RunOutcome:
    """Two requests finished, of 10 rounds and 16 tokens each."""
    finished = tuple(
        Finished(f"t.c{k}.0", 0, RequestRecord(f"t.c{k}.0", "c", "default", 0, 1.0, 1.5, 3.0,
                                               4, 16, 10, 40, 6, slo_tokens_per_s=None),
                 tuple(range(16)), reconnects if k == 0 else 0)
        for k in range(2)
    )  # fmt: skip
    return RunOutcome(start_s=0.0, arrivals_end_s=20.0, end_s=20.0, num_started=2,
                      finished=finished, failed=(), killed=(), lost=(), faults=(),
                      never_served=(), run_tag="t")  # fmt: skip


def _report(before: dict[str, float], after: dict[str, float], outcome: RunOutcome) -> LoadReport:
    session = BenchSession(_args(), LOAD, Path("/nonexistent"), print)
    return session._report(LOAD, outcome, (), before, after, 0)


BEFORE = {"edgespec_verifications_total": 17_554.0, "edgespec_opened_sessions_total": 1_634.0,
          "edgespec_closed_sessions_total": 1_634.0}  # fmt: skip


def test_counters_that_went_backwards_are_a_restart_not_a_disagreement() -> None:
    after = {"edgespec_verifications_total": 20.0, "edgespec_opened_sessions_total": 2.0,
             "edgespec_closed_sessions_total": 2.0}  # fmt: skip
    report = _report(BEFORE, after, _outcome(reconnects=1))
    assert report.agreement is None
    assert report.agreement_note == (
        "the server restarted during the run: its counters went backwards"
    )
    assert (
        "server metrics vs clients: not compared (the server restarted during the run: its "
        "counters went backwards)"
    ) in markdown(report)
    assert "**no**" not in markdown(report)


def test_reconnects_without_counters_going_backwards_are_not_compared() -> None:
    """A server that ran long before the bench may count past its old totals by the end of
    the run after a restart; the clients' reconnects still say it."""
    after = {metric: value + 30_000 for metric, value in BEFORE.items()}
    report = _report(BEFORE, after, _outcome(reconnects=2))
    assert report.agreement is None
    assert report.agreement_note == (
        "the clients reconnected 2 times: the server restarted or lost sessions during the run"
    )


def test_a_run_without_restart_or_reconnects_is_compared() -> None:
    after = {"edgespec_verifications_total": 17_574.0, "edgespec_opened_sessions_total": 1_636.0,
             "edgespec_closed_sessions_total": 1_636.0}  # fmt: skip
    report = _report(BEFORE, after, _outcome())
    assert report.agreement is not None and report.agreement_note == ""
    rows = {a.metric: a for a in report.agreement}
    assert rows["edgespec_verifications_total"].agrees  # 20 rounds
    assert rows["edgespec_opened_sessions_total"].agrees  # 2 sessions


def test_requests_the_clients_cannot_count_are_named_by_number() -> None:
    """A run whose only trouble was requests lost at the drain said "faults or failed
    requests", naming neither."""
    from dataclasses import replace

    from edgespec.runtime.loadgen.scrape import compared

    lost = replace(_outcome(), lost=(("t.c0.1", "drained"), ("t.c1.1", "drained")))
    assert compared(BEFORE, BEFORE, lost) == (
        None, "2 requests lost: the clients cannot count what the server did for them"
    )  # fmt: skip
    killed = replace(_outcome(), lost=(("t.c0.1", "drained"),), killed=("t.c1.1",))
    assert compared(BEFORE, BEFORE, killed)[1] == (
        "1 request lost, 1 request killed: the clients cannot count what the server did for them"
    )


def test_a_server_gone_at_the_end_leaves_the_report_without_its_session_count() -> None:
    """A newcomer audit stopped its --server mid-run: the count of sessions left open failed
    with UNAVAILABLE and the whole report and --json were lost (exit 1, stdout empty). Now
    a line says why the sessions were not counted and the report stands without them."""
    import socket

    from edgespec.runtime.loadgen.spec import ServerAccess

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:  # bound, never listening
        held.bind(("127.0.0.1", 0))
        said: list[str] = []
        args = _args()
        args.session_timeout_s = 1.0
        session = BenchSession(args, LOAD, Path("/nonexistent"), said.append)
        session._access = ServerAccess(f"127.0.0.1:{held.getsockname()[1]}")
        assert session._orphaned_sessions() is None
    assert len(said) == 1 and said[0].startswith(
        "the server's sessions were not counted: UNAVAILABLE: "
    ), said
    report = session._report(LOAD, _outcome(), (), None, None, None)
    assert report.orphaned_sessions is None
    assert "sessions left open on the server" not in markdown(report)
