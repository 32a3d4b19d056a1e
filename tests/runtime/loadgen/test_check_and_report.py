"""The centralized check finds every output that parts from its reference, and where; the
report counts fates and errors by code, and sets the server's counts beside the clients'."""

from __future__ import annotations

from edgespec.core.types import RequestRecord
from edgespec.runtime.loadgen.check import Mismatch, check_outputs
from edgespec.runtime.loadgen.messages import Failed, Finished
from edgespec.runtime.loadgen.outcome import FaultEvent, NeverServed, RunOutcome
from edgespec.runtime.loadgen.report import (
    LoadReport,
    SloRow,
    all_failed_line,
    clip,
    markdown,
    run_metrics,
    summary,
)
from edgespec.runtime.loadgen.scrape import agreement


def _finished(request_id: str, prompt: int, output: tuple[int, ...], rounds: int = 2,
              reconnects: int = 0, resends: int = 0) -> Finished:  # fmt: skip
    record = RequestRecord(request_id, "c", "fast", 0, 1.0, 1.5, 3.0, 4, len(output), rounds,
                           6, 3, slo_tokens_per_s=1.0)  # fmt: skip
    return Finished(request_id, prompt, record, output, reconnects, resends)


def test_a_mismatch_is_found_with_where_it_parts() -> None:
    refs = {0: (1, 2, 3), 1: (4, 5)}
    finished = [_finished("a", 0, (1, 2, 3)), _finished("b", 0, (1, 9, 3)),
                _finished("c", 1, (4,))]  # fmt: skip
    result = check_outputs(finished, refs)
    assert result.num_checked == 3 and result.num_references == 2
    assert result.mismatches == (Mismatch("b", 0, 1, 3, 3), Mismatch("c", 1, 1, 1, 2))


NEVER = (NeverServed("t.w0.0.7", "fast", 1.0, True), NeverServed("t.w0.0.8", "fast", 1.0, False),
         NeverServed("t.w0.0.9", "slow", None, False))  # fmt: skip


def _outcome(never_served: tuple[NeverServed, ...] = NEVER) -> RunOutcome:
    return RunOutcome(
        start_s=0.0, arrivals_end_s=4.0, end_s=4.0, num_started=5,
        finished=(_finished("a", 0, (1, 2, 3), resends=3),
                  _finished("b", 0, (1, 2, 3), reconnects=2)),
        failed=(Failed("c", 0, "NOT_FOUND", "gone"), Failed("d", 1, "NOT_FOUND", "later")),
        killed=("e",), lost=(), faults=(FaultEvent("kill-clients", 2.0, "1 killed"),),
        never_served=never_served, run_tag="t",
    )  # fmt: skip


def _report(outcome: RunOutcome) -> LoadReport:
    return LoadReport({"mode": "distributed"}, outcome, run_metrics(outcome), None, 0, None,
                      "faults")  # fmt: skip


def test_report_counts_fates_errors_and_reconnects() -> None:
    report = _report(_outcome())
    assert report.errors_by_code == {"NOT_FOUND": 2}
    assert report.num_reconnects == 2
    assert report.metrics.num_requests == 2
    assert report.metrics.goodput_tokens_per_s == 6 / 4.0
    data = summary((report,))["runs"][0]
    assert data["run_tag"] == "t"
    assert data["requests"] == {"arrived": 8, "started": 5, "finished": 2, "failed": 2,
                                "killed": 1, "lost": 0, "lost_ids": [], "never_served": 3,
                                "dropped": 1, "unserved": 2, "reconnects": 2,
                                "resends": 3}  # fmt: skip
    text = markdown(report)
    assert text.startswith("## edgespec bench serve (run t): mode distributed\n")
    assert "| | 8 | 5 | 2 | 2 | 1 | **0** | 3 (1, 2) | 2 |" in text
    assert 'errors by gRPC code: NOT_FOUND 2 (first: "gone")' in text
    assert "not compared (faults)" in text


def test_arrivals_never_served_are_misses_of_their_class() -> None:
    """Both finished requests met ``fast``'s 1 token/s; its dropped and unserved arrivals are
    misses (2 of 4); ``slow`` has no target, and no finished request."""
    report = _report(_outcome())
    assert report.slo_rows == (SloRow("fast", 1.0, 2, 2, 2, 0.5),
                               SloRow("slow", None, 0, 1, 0, None))  # fmt: skip
    assert summary((report,))["runs"][0]["slo_attainment"][0] == {
        "slo_class": "fast", "target_tokens_per_s": 1.0, "num_finished": 2,
        "num_never_served": 2, "num_met": 2, "attainment": 0.5}  # fmt: skip
    text = markdown(report)
    assert "| fast | 1 | 2 | 2 | 0.5 |" in text
    assert "| slow | - | 0 | 1 | - |" in text
    assert _report(_outcome(())).slo_rows == (SloRow("fast", 1.0, 2, 0, 2, 1.0),)


def test_each_code_shows_its_first_message_clipped() -> None:
    long = "prompt (30 tokens) + max_new_tokens (5000) exceeds the target's context of 4096 " * 3
    failed = (Failed("x", 0, "INVALID_ARGUMENT", long), Failed("y", 0, "INVALID_ARGUMENT", "b"),
              Failed("z", 0, "UNAVAILABLE", "down\nhard"))  # fmt: skip
    outcome = RunOutcome(0.0, 1.0, 1.0, 3, (), failed, (), (), (), (), "t")
    line = markdown(_report(outcome)).splitlines()[6]
    assert line == (f'errors by gRPC code: INVALID_ARGUMENT 2 (first: "{long[:159]}…"), '
                    'UNAVAILABLE 1 (first: "down hard")')  # fmt: skip
    assert all_failed_line((_report(outcome),)) == (
        f"every request failed (distributed: 3 of 3): INVALID_ARGUMENT: {long[:159]}…; "
        "UNAVAILABLE: down hard"
    )
    assert all_failed_line((_report(_outcome()),)) is None  # 2 of 5 finished
    assert clip("a  b\n c", 5) == "a b c" and clip("abcdef", 5) == "abcd…"


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


def test_a_fault_a_restart_held_up_says_when_it_was_due() -> None:
    """A kill-clients due at 2 s while a restart ran until 5.8 s: applied then, and the
    report says it was due at 2 s (it read as if asked for at 5.8 s, after the arrivals)."""
    from dataclasses import replace

    restart = FaultEvent("restart-server", 1.2, "server killed, started again", 4.6, due_s=1.0)
    held = FaultEvent("kill-clients", 5.8, "1 client processes (1 clients) killed", due_s=2.0)
    text = markdown(_report(replace(_outcome(), faults=(restart, held))))
    assert (
        "- fault at 1.2 s: restart-server: server killed, started again; serving again "
        "after 4.6 s" in text
    )  # on time (within 0.5 s): no due time
    assert (
        "- fault at 5.8 s (due at 2.0 s: a restart before it was still running): "
        "kill-clients: 1 client processes (1 clients) killed" in text
    )


def test_a_restart_that_waited_for_a_request_mid_generation_says_so() -> None:
    """The run's first fault, a restart due at 1 s, waited until 3.3 s for a request
    mid-generation: it was blamed on "a restart before it" (a loadgen review)."""
    from dataclasses import replace

    restart = FaultEvent("restart-server", 3.3, "server killed, started again", 4.0, due_s=1.0,
                         waited_s=2.3)  # fmt: skip
    text = markdown(_report(replace(_outcome(), faults=(restart,))))
    assert (
        "- fault at 3.3 s (waited 2.3 s for a request mid-generation): restart-server: server "
        "killed, started again; serving again after 4.0 s" in text
    )
