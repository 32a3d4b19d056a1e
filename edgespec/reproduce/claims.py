"""Claims of a reproduced paper, side by side with ours, and the REPORT.md that shows them.

Every ``edgespec reproduce <seed>`` returns :class:`ClaimRow` s: one per claim (and sub-claim)
of SEED-NOTES' checklist, each with the paper's number, edgespec's, the tolerance and two
verdicts — the *direction* (who beats whom, which way a curve bends) and the *magnitude*
(within the tolerance). A row whose magnitude cannot be compared (the paper gives no number)
says so with ``None``. A miss stays a miss; its cause goes in ``note``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """One compared number (or statement)."""

    claim_id: str
    what: str
    paper: str
    ours: str
    tolerance: str
    direction_ok: bool | None
    magnitude_ok: bool | None
    note: str = ""

    @property
    def holds(self) -> bool:
        """No verdict failed, and at least one was judged."""
        judged = (self.direction_ok, self.magnitude_ok)
        return False not in judged and judged != (None, None)

    @property
    def verdict(self) -> str:
        def mark(ok: bool | None) -> str:
            return "–" if ok is None else ("✓" if ok else "✗")

        return f"direction {mark(self.direction_ok)}, magnitude {mark(self.magnitude_ok)}"


def within(ours: float, paper: float, relative: float) -> bool:
    """|ours − paper| ≤ relative·|paper| (finite numbers only)."""
    if not (math.isfinite(ours) and math.isfinite(paper)):
        return False
    return abs(ours - paper) <= relative * abs(paper)


def fmt(value: float | None, spec: str = ".3g") -> str:
    return "n/a" if value is None else format(value, spec)


def change(new: float | None, old: float | None) -> float | None:
    """Relative change ``new / old − 1``; ``None`` when either is missing or ``old`` is 0."""
    return None if new is None or old is None or old == 0 else new / old - 1.0


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f}%"


def markdown_table(rows: Sequence[ClaimRow]) -> str:
    head = "| claim | what | paper | edgespec | tolerance | verdict | note |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = (r.claim_id, r.what, r.paper, r.ours, r.tolerance, r.verdict, r.note)
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def write_report(
    path: Path,
    title: str,
    command: str,
    rows: Sequence[ClaimRow],
    choices: Sequence[tuple[str, str]],
    files: Sequence[str],
) -> None:
    """REPORT.md: the command, the claims table, the chosen inputs with their reasons, and
    the files (scenarios, plots, raw results) beside it."""
    hits = sum(1 for r in rows if r.holds)
    parts = [
        f"# {title}",
        "",
        f"Command: `{command}`",
        "",
        f"{len(rows)} rows; {hits} hold: no verdict failed (direction right where it is "
        "judged, magnitude within tolerance where it is compared).",
        "",
        markdown_table(rows),
        "",
        "## Inputs the paper does not state, chosen once for every claim",
        "",
        *[f"- **{name}**: {why}" for name, why in choices],
        "",
        "## Files",
        "",
        *[f"- `{f}`" for f in files],
        "",
    ]
    path.write_text("\n".join(parts))


def print_claims(rows: Sequence[ClaimRow], console: Console | None = None) -> None:
    table = Table(title="claims: paper vs edgespec", show_lines=False)
    for name in ("claim", "what", "paper", "edgespec", "tolerance", "verdict"):
        table.add_column(name, overflow="fold")
    for r in rows:
        table.add_row(r.claim_id, r.what, r.paper, r.ours, r.tolerance, r.verdict)
    (console or Console()).print(table)
