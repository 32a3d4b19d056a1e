"""REPORT.md of a reproduction: the headline, the outcomes explained, the claims table with
each cause, the findings, the inputs chosen once, the files, then the paper's own sections
(its sensitivities, ...) and, in a quick run, what it leaves out; written whole or not at
all."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from edgespec.output_paths import write_text_atomically
from edgespec.reproduce.claims import (
    UNKNOWN_CAUSE,
    Cause,
    ClaimRow,
    Finding,
    PaperError,
    headline,
)

OUTCOMES_EXPLAINED = (
    "A row holds when no verdict failed (direction right where it is judged, magnitude within "
    "the tolerance where it is compared); it holds in direction only when the direction is "
    "right and the magnitude is not; it misses when the direction is wrong, or when the "
    "magnitude is outside the tolerance and no direction is judged. A row whose number a "
    "chosen input fixes is a setting, shown beside the paper's and never judged; one whose "
    "verdict the model's construction decides (no run could come out otherwise) holds by "
    "construction, shown and not judged; one judged at a setting the run did not reach within "
    "its tolerance is not comparable, its numbers shown. Every row "
    "that misses or holds in direction only says why: a cause class ("
    + "; ".join(c.value for c in Cause)
    + f") and one line, or “{UNKNOWN_CAUSE}”."
)
QUICK_EXPLAINED = (
    "**Quick run** (`--quick`): fewer and shorter runs than the full reproduction. A magnitude "
    "that depends on the run length is marked “(quick run)” and not compared with the "
    "paper's: its row holds in direction only, or is not comparable where no direction is "
    "judged. Run without `--quick` to compare it. The last section lists what the quick run "
    "leaves out of the full one."
)


def markdown_table(rows: Sequence[ClaimRow]) -> str:
    head = "| claim | what | paper | edgespec | tolerance | verdict | outcome | cause | note |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = (
            r.claim_id,
            r.what,
            r.paper,
            r.ours,
            r.tolerance,
            r.verdict,
            r.outcome.value,
            r.why,
            r.note,
        )
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


FINDINGS_EXPLAINED = (
    "Where the paper's number rests on its simulator's simplification or on an input it does "
    "not give, or the paper is inconsistent with itself: each with its class and the run that "
    "shows it."
)
QUICK_FINDINGS = (
    "A quick run's numbers are not compared with the paper's, so no finding here rests on "
    "them; left to the full run, which states them from its own: "
)


def findings_markdown(findings: Sequence[Finding], quick: bool) -> list[str]:
    """REPORT.md's *Findings* lines (none without findings). A ``quick`` run states only
    those resting on the paper's numbers and the chosen inputs, and names the rest, each
    with the run's numbers it rests on (:attr:`Finding.from_run`), as left to the full
    run."""
    if not findings:
        return []
    left = [f for f in findings if quick and f.from_run]
    shown = [f for f in findings if f not in left]
    lines = ["## Findings", ""]
    if shown:
        lines += [FINDINGS_EXPLAINED, "", *[f.markdown() for f in shown], ""]
    if left:
        names = "; ".join(f"**{f.claims}**, resting on {f.from_run}" for f in left)
        lines += [f"{QUICK_FINDINGS}{names}.", ""]
    return lines


PAPER_ERRORS_HEADING = "Where the paper is wrong"
PAPER_ERRORS_EXPLAINED = (
    "The paper's known errors (SEED-NOTES): what it prints or says, and what its own numbers "
    "or the run give instead. The rows compare with the latter where their paper column "
    "says so."
)


def paper_errors_markdown(errors: Sequence[PaperError]) -> list[str]:
    """REPORT.md's *Where the paper is wrong* lines, one known error a line (none: no
    section)."""
    if not errors:
        return []
    return [f"## {PAPER_ERRORS_HEADING}", "", PAPER_ERRORS_EXPLAINED, "",
            *[e.markdown() for e in errors], ""]  # fmt: skip


LEFT_OUT_HEADING = "What the quick run leaves out"
"""The title of a quick REPORT.md's closing section (:func:`left_out_markdown`)."""


def left_out_markdown(items: Sequence[str], run: str = "quick run") -> list[str]:
    """A quick REPORT.md's closing section: what the quick run (``run``: a run cut
    otherwise) leaves out of the full one, one item a line, each read off the paper's quick
    plan against its full one (none: no section)."""
    if not items:
        return []
    return [f"## What the {run} leaves out", "", *[f"- {item}" for item in items], ""]


SENSITIVITIES_SHOWN = "Shown, never judged and never used to choose an input."


def sensitivities_markdown(items: Sequence[str]) -> str:
    """REPORT.md's *Sensitivities* section (an appendix of :func:`write_report`): an
    alternative reading or value of an unstated input, one item a line, each shown and
    never judged."""
    return "\n".join(["", "## Sensitivities", "", SENSITIVITIES_SHOWN, "",
                      *[f"- {item}" for item in items]]) + "\n"  # fmt: skip


def write_report(
    path: Path,
    title: str,
    command: str,
    rows: Sequence[ClaimRow],
    choices: Sequence[tuple[str, str]],
    files: Sequence[str],
    *,
    quick: bool = False,
    findings: Sequence[Finding] = (),
    paper_errors: Sequence[PaperError] = (),
    named_modes: str = "",
    appendix: str = "",
    left_out: Sequence[str] = (),
) -> None:
    """REPORT.md: the command, the headline counts, the claims table with each miss's cause,
    the findings and the paper's known errors (where given), ``named_modes`` as given (the
    sections of modes beside the paper's system, never in its headline), the chosen inputs
    with their reasons, the files (scenarios, plots, raw results) beside it, then
    ``appendix`` as given; written whole or not at all.
    ``quick``: the rows come from a ``--quick`` run, and the header says so; its findings
    are :func:`findings_markdown`'s, and it ends with what it leaves out of the full run,
    ``left_out`` (:func:`left_out_markdown`), which a quick report, and only one, gives."""
    if quick != bool(left_out):
        said = "a quick run, nothing" if quick else f"a full run, {len(left_out)} item(s)"
        raise ValueError(f"{path}: {said} left out: a quick report, and only a quick one, "
                         "says what the run leaves out")  # fmt: skip
    unexplained = sum(1 for r in rows if r.why.startswith(UNKNOWN_CAUSE))
    parts = [f"# {title}", "", f"Command: `{command}`", ""]
    if quick:
        parts += [QUICK_EXPLAINED, ""]
    parts += [f"{headline(rows)}.", "", OUTCOMES_EXPLAINED]
    if unexplained:
        parts += ["", f"{unexplained} of the rows that do not hold have no known cause."]
    parts += [
        "",
        markdown_table(rows),
        "",
    ]
    parts += findings_markdown(findings, quick)
    parts += paper_errors_markdown(paper_errors)
    if named_modes:
        parts += [named_modes.strip("\n"), ""]
    parts += [
        "## Inputs the paper does not state, chosen once for every claim",
        "",
        *[f"- **{name}**: {why}" for name, why in choices],
        "",
        "## Files",
        "",
        *[f"- `{f}`" for f in files],
        "",
    ]
    text = "\n".join(parts) + appendix
    if left_out:
        text = text.rstrip("\n") + "\n\n" + "\n".join(left_out_markdown(left_out))
    write_text_atomically(path, text)
