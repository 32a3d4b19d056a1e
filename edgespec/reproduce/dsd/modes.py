"""Which cost mode is DSD's system as the paper defines it, and so the only one the headline
counts (:data:`PAPER_MODE`), and the named mode beside it (:data:`NAMED_MODE`), whose rows
are shown and counted on a line of their own (:func:`named_mode_line`), never added to the
headline: judging every claim in both modes and adding both to one count would give each
claim two chances to hold.

The paper defines its system in §2.1 and Eqs. 1–2: the draft model generates γ tokens in γ
passes (Eq. 2's cost cγ + 1), an iteration commits the accepted prefix and the target's own
token (Eq. 1's E[τ] = (1 − α^(γ+1)) / (1 − α)), TPOT is a per-request metric (§3.5), and a
fused round is the target's work (§3.3, §4.4), which nothing there lets skip its queue.
``physical`` models exactly that. ``dsdsim_compat`` models DSD-Sim's code where it departs
from those definitions (one-pass drafting, ⌈output/γ⌉ rounds without the target's token, a
wasted fused pass, fused rounds outside the queue, TPOT over accepting rounds, the drain:
``choices.COMPAT_SIMPLIFICATIONS``): simplifications of the paper's own simulator, whose
effect REPORT.md's *Findings* and the rows' causes name, not the system the paper defines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from edgespec.reproduce.claims import UNKNOWN_CAUSE, ClaimRow, headline
from edgespec.reproduce.dsd.causes import MODE_TAGS
from edgespec.reproduce.dsd.claims import CALIBRATION, all_rows
from edgespec.reproduce.dsd.runs import DsdResults
from edgespec.reproduce.dsd.setup import COST_MODES, CostMode
from edgespec.reproduce.printed import claims_renderable
from edgespec.reproduce.report_file import markdown_table

PAPER_MODE: CostMode = "physical"
"""The cost mode that models DSD's system as the paper defines it: the headline's."""
NAMED_MODE: CostMode = "dsdsim_compat"
"""DSD-Sim's simplifications, a named mode beside the paper's system."""
PAPER_MODE_WHY = (
    "the paper defines its system in §2.1 and Eqs. 1–2 (γ draft passes a round, the target's "
    "own token committed with the accepted prefix, TPOT per request, fused rounds as the "
    "target's work); the physical mode models that, the DSD-Sim compat mode models where "
    "DSD-Sim's code departs from it"
)
NAMED_MODE_HEADING = "DSD-Sim compat mode: a named mode beside the paper's system"
NAMED_MODE_EXPLAINED = (
    "DSD-Sim's simplifications of the system the paper defines (one-pass drafting, fixed "
    "rounds, a wasted fused pass, unqueued fused rounds, TPOT over accepting rounds, the "
    "drain), run on every claim beside the paper's system. Its rows are counted here, on a "
    "line of their own, and never in the headline, which counts the physical mode's only "
    f"({PAPER_MODE_WHY}): two modes in one count would give every claim two chances."
)


@dataclass(frozen=True, slots=True)
class ModeRows:
    """A run's rows split by what counts them: ``paper``, the headline's (D1 and the
    paper's mode's rows), and ``named``, the named mode's, each by claim."""

    paper: tuple[ClaimRow, ...]
    named: tuple[ClaimRow, ...]


def split_modes(calibration: ClaimRow, by_mode: Mapping[CostMode, Sequence[ClaimRow]]) -> ModeRows:
    """``calibration`` (D1, once for both modes) and the paper's mode's rows as the
    headline's, the named mode's apart, each sorted by claim; every cost mode is needed."""
    missing = [m for m in COST_MODES if m not in by_mode]
    if missing:
        raise ValueError(f"DSD rows: no rows for cost mode(s) {', '.join(missing)}")
    paper = sorted([calibration, *by_mode[PAPER_MODE]], key=lambda r: r.claim_id)
    named = sorted(by_mode[NAMED_MODE], key=lambda r: r.claim_id)
    return ModeRows(tuple(paper), tuple(named))


def named_mode_line(rows: Sequence[ClaimRow]) -> str:
    """The named mode's own count: ``DSD-Sim compat mode (named, not in the headline): …``."""
    return f"{MODE_TAGS[NAMED_MODE]} mode (named, not in the headline): {headline(rows)}"


def named_mode_markdown(rows: Sequence[ClaimRow]) -> str:
    """REPORT.md's section of the named mode: its count on a line of its own, what it is,
    and its rows, each with its cause (a REPORT.md appendix)."""
    unexplained = sum(1 for r in rows if r.why.startswith(UNKNOWN_CAUSE))
    parts = ["", f"## {NAMED_MODE_HEADING}", "", f"{named_mode_line(rows)}.", "",
             NAMED_MODE_EXPLAINED, ""]  # fmt: skip
    if unexplained:
        parts += [f"{unexplained} of its rows that do not hold have no known cause.", ""]
    return "\n".join([*parts, markdown_table(rows)]) + "\n"


def print_named_mode(
    rows: Sequence[ClaimRow], console: Console | None = None, *, quick: bool = False
) -> None:
    """The named mode's table after the headline's, under a line saying it is not in the
    headline above (its own count is the table's first line after the title)."""
    console = console or Console(markup=False)
    console.print()
    console.print(Text(f"{NAMED_MODE_HEADING}; its rows are not in the headline above"))
    console.print(claims_renderable(rows, console.width, quick=quick))


def headline_lines(results: Sequence[DsdResults]) -> str:
    """The headline (D1 and the paper's mode's rows) and, on a line of its own, the named
    mode's count, rebuilt from ``results`` without running anything (docs/REPRODUCE.md's
    command over the full run's results.json)."""
    rows = split_modes(CALIBRATION, {res.cost_mode: all_rows(res) for res in results})
    return f"{headline(rows.paper)}\n{named_mode_line(rows.named)}"
