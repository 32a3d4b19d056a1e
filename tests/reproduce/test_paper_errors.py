"""REPORT.md's *Where the paper is wrong*: the known errors of WISP and DSD (SEED-NOTES
§1.4 items 1–3, §4.4 items 2, 3 and 8), each computed from the paper's printed numbers, the
rows' paper columns showing what the paper prints beside what they compare with."""

from __future__ import annotations

from pathlib import Path

from edgespec.reproduce.claims import ClaimRow, PaperError
from edgespec.reproduce.dsd.paper_errors import paper_errors as dsd_errors
from edgespec.reproduce.report_file import write_report
from edgespec.reproduce.wisp.findings import paper_errors as wisp_errors


def test_wisp_lists_its_known_errors_from_the_printed_numbers() -> None:
    assert [e.markdown() for e in wisp_errors()] == [
        "- **W9 (§4.4 vs App. C Table 12)**: the paper says (§4.4) the estimator's "
        "coefficients are a = 143.39 µs/token, b_compute = 2.53 ns, b_read = 2.67 µs "
        "(n = 566, no c); Table 12 gives a = 33.14 µs/token, b_compute = 34.5 ns, "
        "b_read = 4.62 µs, c = 14.86 ms (n = 173): W9 and every simulated verifier use "
        "Table 12.",
        "- **W9 (Table 7 vs Fig. 9a)**: the paper says (Fig. 9a's text) the held-out fit has "
        "R² 0.9924, MAPE 6.45%; Table 7 gives R² 0.992, MAPE 4.93%: W9 compares with Table "
        "7's test column.",
        "- **W4 (Table 1)**: the paper says (Table 1) the table is FCFS's (its title), its "
        "classes 1–4 are 8/6/4/2 tok/s; it holds a WISP row too, and Table 2 and §5.3 number "
        "the classes 2/4/6/8 tok/s: W4 names each class by its tok/s.",
        "- **W7 (Table 5)**: the paper says (Table 5) the predictor improves acceptance by "
        "+54.0% (qwen3-0.6b) and +44.7% (qwen3-4b); its own OFF → ON rates give qwen3-0.6b "
        "0.31 → 0.48 = +54.8%; qwen3-4b 0.47 → 0.66 = +40.4%: W7 compares with these, its "
        "paper column showing the misprint beside them.",
    ]


def test_dsd_lists_its_text_claims_and_misprints_that_table_2_contradicts() -> None:
    # the fifth, §5's hardware against Fig. 5's, and the run's: tests/reproduce/dsd
    assert [e.markdown() for e in dsd_errors()[:4]] == [
        "- **D4, D5 (text)**: the paper says (text) AWC has the best throughput in all 12 "
        "cases; its Table 2 gives 11 of 12 (C3 gsm8k Dynamic 18.9 > AWC 18.5 req/s): the D4 "
        "and D5 rows' paper columns are counted and averaged from Table 2's values.",
        "- **D4 (text)**: the paper says (text) AWC's throughput is +3–10% over Static's; its "
        "Table 2 gives C3 humaneval +0.9% (11.2 → 11.3 req/s): the D4 and D5 rows' paper "
        "columns are counted and averaged from Table 2's values.",
        "- **D4 (Table 2 TPOT percentages)**: the paper says (Table 2) AWC's TPOT changes "
        "over Static's by -10.7% (C1 gsm8k), -7.1% (C2 gsm8k), -8.8% (C3 gsm8k), -8.6% (C4 "
        "gsm8k), -9.7% (C1 humaneval), -6.9% (C2 humaneval), -6.0% (C4 humaneval), -10.2% "
        "(C4 cnndm); its own absolute values give -9.7%, -6.6%, -6.4%, -7.9%, -8.9%, -6.5%, "
        "-5.7%, -9.3%: 8 of its 12 TPOT percentages are misprints, and the D4 rows compare "
        "with the absolute values.",
        "- **D4 (contributions)**: the paper says (contributions) AWC gives 11% lower TPOT; "
        "Table 2's largest TPOT drop is 9.7% (C1 gsm8k), 10.7% as printed.",
    ]


def test_report_md_has_the_section_after_the_findings(tmp_path: Path) -> None:
    row = ClaimRow("X1", "what", "1", "1", "±25%", True, True)
    error = PaperError("X1 (Table 9)", "(Table 9) 2 + 2 = 5", "its own cells give 4")
    path = tmp_path / "REPORT.md"
    write_report(path, "T", "cmd", [row], [], [], paper_errors=[error])
    text = path.read_text()
    assert (
        "## Where the paper is wrong\n\nThe paper's known errors (SEED-NOTES): what it prints "
        "or says, and what its own numbers or the run give instead. The rows compare with the "
        "latter where their paper column says so.\n\n- **X1 (Table 9)**: the paper says "
        "(Table 9) 2 + 2 = 5; its own cells give 4.\n\n## Inputs the paper does not state"
    ) in text
    write_report(path, "T", "cmd", [row], [], [])
    assert "Where the paper is wrong" not in path.read_text()
