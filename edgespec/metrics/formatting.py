"""Plain numbers and whole headers for the terminal's tables: every figure a plain number
(:func:`plain`, :func:`fixed`, :func:`setting`, :func:`percent`): never an exponent,
thousands grouped from five integer digits on (``10,634``, ``1000.0``), a share short of
all never ``100.0%``; a table's headers never cut short: in a table too wide for the
terminal they wrap at spaces and after dots (:func:`fit_headers`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from edgespec.config.overrides import value_text


def _grouped(text: str) -> str:
    """A number formatted with ``,`` grouping, the commas kept only when its integer part
    has five digits or more (``10,634``; ``1000.0``, not ``1,000.0``)."""
    digits = text.lstrip("-").split(".")[0].replace(",", "")
    return text if len(digits) > 4 else text.replace(",", "")


def fixed(value: float, decimals: int) -> str:
    """``value`` with ``decimals`` decimals, thousands grouped (:func:`_grouped`), no
    exponent; ``-`` for a value that is not finite."""
    if not math.isfinite(value):
        return "-"
    text = _grouped(format(value, f",.{decimals}f"))
    return text.lstrip("-") if text.strip("-0.,") == "" else text  # no "-0.0"


def percent(share: float | None) -> str:
    """``share`` (of 1) as a percentage with one decimal; ``-`` for ``None`` or a value
    that is not finite. A share strictly between 0 and 1 never shows as ``0.0%`` or
    ``100.0%``: 2,999 of 3,000 met is ``99.9%``, not all of them; 1 of 10,000 ``0.1%``."""
    if share is None:
        return "-"
    shown = fixed(100 * share, 1)
    if 0 < share < 1 and shown in ("0.0", "100.0"):
        shown = "0.1" if shown == "0.0" else "99.9"
    return "-" if shown == "-" else f"{shown}%"


def plain(value: float | None, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, but every digit of its integer part, as
    a plain number: ``5.5``, ``0.0123``, ``1234``, ``10,634``, never ``1.063e+04``;
    an integer in full; ``-`` for ``None`` or a value that is not finite."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return _grouped(f"{value:,}")
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = fixed(value, decimals)
    return text.rstrip("0").rstrip(".") if "." in text else text


def setting(value: Any) -> str:
    """A run's setting (a swept or searched value) in a table: a number exactly as given,
    as a plain number (``0.00001``, not ``1e-05``); anything else as the user types it
    (:func:`edgespec.config.value_text`: ``true``, ``null``, ``fcfs``, ``[1, 2]``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value_text(value)
    if isinstance(value, int):
        return plain(value)
    if not math.isfinite(value):
        return str(value)
    text = format(Decimal(repr(value)), ",f")
    return _grouped(text)


def _pieces(header: str) -> list[list[str]]:
    """A header's words (split at spaces), each as its pieces, split after each dot."""
    return [re.findall(r"[^.]*\.|[^.]+", word) for word in header.split()]


def wrap_header(header: str, width: int) -> list[str]:
    """``header``'s lines at most ``width`` columns wide where its pieces allow, broken
    only at spaces (dropped) and after dots (kept): ``policies.window.`` / ``params.gamma``;
    a piece wider than ``width`` stands on a line of its own, whole."""
    from rich.cells import cell_len

    lines: list[str] = []
    line = ""
    for word in _pieces(header):
        for k, piece in enumerate(word):
            joined = f"{line} {piece}" if line and k == 0 else line + piece
            if line and cell_len(joined) > width:
                lines.append(line)
                line = piece
            else:
                line = joined
    return [*lines, line]


def fit_headers(headers: Sequence[str], body: Sequence[Sequence[str]], width: int) -> list[str]:
    """``headers`` (one per column of ``body``'s rows), each whole on one line when the
    columns fit ``width`` cells of content; else wrapped (:func:`wrap_header`), one column
    a step, the one whose narrowing saves the most (then the widest), until they fit or
    none can narrow. Lines are joined by newlines; no header loses a character."""
    from rich.cells import cell_len

    count = range(len(headers))
    cells = [max((cell_len(row[i]) for row in body), default=0) for i in count]
    limits = [cell_len(h) for h in headers]

    def column(i: int, limit: int) -> int:
        return max(cells[i], *(cell_len(line) for line in wrap_header(headers[i], limit)))

    widths = [column(i, limits[i]) for i in count]
    while sum(widths) > width:
        savings = {i: widths[i] - column(i, widths[i] - 1) for i in count if widths[i] > 1}
        best = max(savings, key=lambda i: (savings[i], widths[i]), default=None)
        if best is None or savings[best] <= 0:
            break
        limits[best] = widths[best] - 1
        widths[best] = column(best, limits[best])
    return ["\n".join(wrap_header(h, limit)) for h, limit in zip(headers, limits, strict=True)]
