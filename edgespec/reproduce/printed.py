"""The claims table as printed on the terminal (``edgespec reproduce`` prints it after
writing REPORT.md): claim, what, paper, edgespec, tolerance and verdict columns fitted to
the terminal's width with words kept whole, each row's cause on a line of its own under it.
A setting's or a by-construction row's verdict column shows no marks: nothing was judged;
a quick run's magnitude shows ``– (quick run)``, as REPORT.md's verdict does: not compared;
what a quick run leaves out follows the table, as REPORT.md's closing section lists it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from edgespec.reproduce.claims import QUICK_PRINTED, UNJUDGED, ClaimRow, Outcome, headline, mark
from edgespec.reproduce.report_file import LEFT_OUT_HEADING

_COLUMNS = ("claim", "what", "paper", "edgespec", "tolerance", "verdict")
_GAP = 2
"""Spaces between two columns of the printed table."""
_SHORT = {
    Outcome.HOLDS: "hold",
    Outcome.DIRECTION_ONLY: "direction only",
    Outcome.MISS: "miss",
    Outcome.QUICK: "not comparable",
    Outcome.NOT_JUDGED: "not judged",
    Outcome.SETTING: "setting",
    Outcome.BY_CONSTRUCTION: "by construction",
    Outcome.UNREACHED: "not comparable",
    Outcome.WITHIN_RESOLUTION: "not comparable",
}
"""The outcome in the printed table's verdict column."""


def _terminal_cells(r: ClaimRow) -> tuple[str, ...]:
    short = _SHORT[r.outcome]
    marks = "" if r.outcome in UNJUDGED else f"{mark(r.direction_ok)} {r.magnitude_mark} "
    return (r.claim_id, r.what, r.paper, r.ours, r.tolerance, marks + short)


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=1)


def column_widths(table: Sequence[Sequence[str]], width: int, gap: int = _GAP) -> list[int] | None:
    """Widths for ``table``'s columns within ``width`` (``gap`` between two columns) that
    keep every word whole: each column at least its longest word, the room left shared in
    proportion to what each column still wants. ``None`` when the longest words alone do not
    fit."""
    n = len(table[0])
    low = [max(_longest_word(row[i]) for row in table) for i in range(n)]
    high = [max(max(cell_len(row[i]) for row in table), low[i]) for i in range(n)]
    room = width - gap * (n - 1)
    if sum(low) > room:
        return None
    if sum(high) <= room:
        return high
    spare = room - sum(low)
    want = [h - lo for h, lo in zip(high, low, strict=True)]
    share = [spare * w // sum(want) for w in want]
    widths = [lo + s for lo, s in zip(low, share, strict=True)]
    left = spare - sum(share)
    for i in sorted(range(n), key=lambda i: want[i] - share[i], reverse=True)[:left]:
        widths[i] += 1
    return widths


def _grid_row(cells: Sequence[str], widths: Sequence[int], style: str = "") -> Table:
    grid = Table.grid(padding=(0, _GAP, 0, 0))
    for w in widths:
        grid.add_column(width=w, overflow="fold")
    grid.add_row(*(Text(c, style=style) for c in cells))
    return grid


def claims_renderable(
    rows: Sequence[ClaimRow], width: int, *, quick: bool = False
) -> RenderableType:
    """The claims as a table of claim / what / paper / edgespec / tolerance / verdict,
    ``width`` columns wide, words kept whole; under each row that does not hold, its cause
    on a line of its own. Where the longest words do not fit side by side, each row's cells
    stack."""
    title = "claims: paper vs edgespec" + (" (quick run)" if quick else "")
    parts: list[RenderableType] = [
        Text(title, style="bold"),
        Text(headline(rows)),
        Text("verdict: direction, magnitude (✓ right, ✗ wrong, – not judged), then the outcome"),
    ]
    if quick:
        parts.append(Text(QUICK_PRINTED))
    cells = [_terminal_cells(r) for r in rows]
    widths = column_widths([_COLUMNS, *cells], width)
    if widths is not None:
        parts.append(_grid_row(_COLUMNS, widths, style="bold"))
        parts.append(Text("─" * min(width, sum(widths) + _GAP * (len(widths) - 1))))
    indent = 2 if widths is None else widths[0] + _GAP
    for r, row in zip(rows, cells, strict=True):
        if widths is not None:
            parts.append(_grid_row(row, widths))
        else:
            parts.append(Text(f"{r.claim_id}  {r.what}", style="bold"))
            for name, value in zip(_COLUMNS[2:], row[2:], strict=True):
                parts.append(Padding(Text(f"{name}: {value}"), (0, 0, 0, 2)))
        if r.why:
            parts.append(Padding(Text(f"↳ {r.why}", style="italic"), (0, 0, 0, indent)))
    return Group(*parts)


def print_claims(
    rows: Sequence[ClaimRow],
    console: Console | None = None,
    *,
    quick: bool = False,
    left_out: Sequence[str] = (),
) -> None:
    """Print the claims table (:func:`claims_renderable`) at the console's width, then what
    a quick run leaves out (``left_out``, as REPORT.md lists it), one item a line, unwrapped."""
    console = console or Console(markup=False)
    console.print(claims_renderable(rows, console.width, quick=quick))
    print_left_out(left_out, console)


def print_left_out(
    items: Sequence[str], console: Console | None = None, run: str = "quick run"
) -> None:
    """What a quick run (``run``: a run cut otherwise) leaves out (``items``, as REPORT.md's
    closing section lists them), under a line naming that section, one item a line,
    unwrapped; nothing for none."""
    console = console or Console(markup=False)
    heading = LEFT_OUT_HEADING.replace("quick run", run)
    lines = [f"{run} leaves out (REPORT.md, “{heading}”):"] if items else []
    for line in [*lines, *[f"  - {item}" for item in items]]:
        console.print(Text(line), soft_wrap=True)
