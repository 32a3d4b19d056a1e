"""The centralized check finds every output that parts from its reference, and where; the
report counts fates and errors by code, and sets the server's counts beside the clients'."""

from __future__ import annotations

from edgespec.core.types import RequestRecord
from edgespec.runtime.loadgen.check import Mismatch, check_outputs
from edgespec.runtime.loadgen.report import LoadReport, markdown, run_metrics, summary
from edgespec.runtime.loadgen.run import FaultEvent, RunOutcome
from edgespec.runtime.loadgen.scrape import agreement
from edgespec.runtime.loadgen.worker import Failed, Finished


def _finished(request_id: str, prompt: int, output: tuple[int, ...], rounds: int = 2,
              reconnects: int = 0) -> Finished:  # fmt: skip
    record = RequestRecord(request_id, "c", "fast", 0, 1.0, 1.5, 3.0, 4, len(output), rounds,
                           6, 3, slo_tokens_per_s=1.0)  # fmt: skip
    return Finished(request_id, prompt, record, output, reconnects)


def test_a_mismatch_is_found_with_where_it_parts() -> None:
    refs = {0: (1, 2, 3), 1: (4, 5)}
    finished = [_finished("a", 0, (1, 2, 3)), _finished("b", 0, (1, 9, 3)),
                _finished("c", 1, (4,))]  # fmt: skip
    result = check_outputs(finished, refs)
    assert result.num_checked == 3 and result.num_references == 2
    assert result.mismatches == (Mismatch("b", 0, 1, 3, 3), Mismatch("c", 1, 1, 1, 2))


def _outcome() -> RunOutcome:
    return RunOutcome(
        start_s=0.0, arrivals_end_s=4.0, end_s=4.0, num_started=5,
        finished=(_finished("a", 0, (1, 2, 3)), _finished("b", 0, (1, 2, 3), reconnects=2)),
        failed=(Failed("c", 0, "NOT_FOUND", "gone"), Failed("d", 1, "NOT_FOUND", "gone")),
        killed=("e",), lost=(), faults=(FaultEvent("kill-clients", 2.0, "1 killed"),),
    )  # fmt: skip


def test_report_counts_fates_errors_and_reconnects() -> None:
    outcome = _outcome()
    report = LoadReport({"mode": "distributed"}, outcome, run_metrics(outcome), None, 0, None,
                        "faults")  # fmt: skip
    assert report.errors_by_code == {"NOT_FOUND": 2}
    assert report.num_reconnects == 2
    assert report.metrics.num_requests == 2
    assert report.metrics.goodput_tokens_per_s == 6 / 4.0
    data = summary((report,))["runs"][0]
    assert data["requests"] == {"started": 5, "finished": 2, "failed": 2, "killed": 1,
                                "lost": 0, "lost_ids": [], "reconnects": 2}  # fmt: skip
    text = markdown(report)
    assert "| | 5 | 2 | 2 | 1 | **0** | 2 |" in text
    assert "errors by gRPC code: NOT_FOUND 2" in text
    assert "not compared (faults)" in text


def test_agreement_is_the_counters_increase_against_the_clients_counts() -> None:
    finished = [_finished("a", 0, (1, 2, 3), rounds=2), _finished("b", 0, (1, 2), rounds=1,
                                                                  reconnects=1)]  # fmt: skip
    before = {"edgespec_verifications_total": 10.0, "edgespec_committed_tokens_total": 7.0}
    after = {"edgespec_verifications_total": 13.0, "edgespec_committed_tokens_total": 11.0,
             "edgespec_opened_sessions_total": 3.0}  # fmt: skip
    rows = {a.metric: a for a in agreement(before, after, finished)}
    assert (rows["edgespec_verifications_total"].server, rows["edgespec_verifications_total"]
            .clients) == (3.0, 3.0)  # fmt: skip
    assert rows["edgespec_verifications_total"].agrees
    committed = rows["edgespec_committed_tokens_total"]
    assert (committed.server, committed.clients, committed.agrees) == (4.0, 5.0, False)
    assert rows["edgespec_opened_sessions_total"].clients == 3  # two requests, one reconnect
    assert rows["edgespec_drafted_tokens_total"].clients == 12
