"""What a quick run's REPORT.md may state beyond its rows: a finding that rests on the run's
own numbers is not stated (its numbers are not compared with the paper's), only named as
left to the full run; one resting on the paper's printed numbers is stated as in a full
run. A would-be verdict beside a sensitivity shows a quick magnitude as a row does."""

from __future__ import annotations

from pathlib import Path

from edgespec.reproduce.claims import Cause, ClaimRow, Finding, magnitude_mark
from edgespec.reproduce.report_file import write_report

ROW = ClaimRow("X1", "what", "1", "2", "±25%", True, None)
PRINTED = Finding("X2 (Table 2)", Cause.MISSING_INPUT, "the printed cells disagree.", "arithmetic")
FROM_RUN = Finding(
    "X3 (Fig. 6)", Cause.SIMPLIFICATION, "the fleet decides: 60 ms.", "the X3 rows",
    "the crossover RTT on each fleet",
)  # fmt: skip
LEFT = (
    "A quick run's numbers are not compared with the paper's, so no finding here rests on "
    "them; left to the full run, which states them from its own: **X3 (Fig. 6)**, resting "
    "on the crossover RTT on each fleet."
)


def _report(tmp_path: Path, findings: list[Finding], quick: bool) -> str:
    path = tmp_path / "REPORT.md"
    write_report(path, "T", "cmd", [ROW], [("seed", "fixed")], [], quick=quick, findings=findings,
                 left_out=["X3 at 4 devices: not run"] if quick else [])  # fmt: skip
    return path.read_text()


def test_a_quick_run_states_no_finding_that_rests_on_its_numbers(tmp_path: Path) -> None:
    text = _report(tmp_path, [PRINTED, FROM_RUN], quick=True)
    section = text[text.index("## Findings") : text.index("## Inputs the paper")]
    assert section == (
        "## Findings\n\nWhere the paper's number rests on its simulator's simplification or "
        "on an input it does not give, or the paper is inconsistent with itself: each with "
        "its class and the run that shows it.\n\n"
        f"{PRINTED.markdown()}\n\n{LEFT}\n\n"
    )
    assert "the fleet decides: 60 ms" not in text and "Shown by: the X3 rows" not in text


def test_a_quick_run_whose_findings_all_rest_on_it_says_only_that(tmp_path: Path) -> None:
    text = _report(tmp_path, [FROM_RUN], quick=True)
    assert text[text.index("## Findings") : text.index("## Inputs the paper")] == (
        f"## Findings\n\n{LEFT}\n\n"
    )


def test_a_full_run_states_every_finding(tmp_path: Path) -> None:
    text = _report(tmp_path, [PRINTED, FROM_RUN], quick=False)
    assert f"{PRINTED.markdown()}\n{FROM_RUN.markdown()}\n" in text
    assert "left to the full run" not in text


def test_a_would_be_magnitude_of_a_quick_run_is_not_compared() -> None:
    assert [magnitude_mark(ok) for ok in (True, False, None)] == ["✓", "✗", "–"]
    shortened = "40 s runs (full: 120 s)"
    assert [magnitude_mark(ok, shortened) for ok in (True, False)] == ["– (quick run)"] * 2
    assert magnitude_mark(None, shortened) == "–"  # nothing judged: nothing to withhold
    row = ClaimRow("X1", "what", "1", "2", "±25%", None, False, quick_run=shortened)
    assert row.magnitude_mark == "– (quick run)" and row.verdict.endswith("– (quick run)")
