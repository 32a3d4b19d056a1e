"""What ``edgespec profile`` prints when its files are written: a table of every fit it
wrote or could write (the target's Eq. 19 and Eq. 17 over the architecture's and Zhu's
printed FLOPs, the drafter's likewise), their coefficients, intervals and held-out
metrics; the grid's size; the drafter's time per token and batch sizes timed; the terms
clipped to 0; the files written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgespec.profiling.fit import LinearFit

PRINTED = "(printed FLOPs)"
"""What a label of a fit over Zhu's printed FLOPs ends with (``NAME-zhu-printed.yaml``)."""


def summary_fits(result: Any) -> list[tuple[str, LinearFit]]:
    """``result``'s fits (a :class:`~edgespec.profiling.run.ProfileResult`), each with the
    label the summary shows it under, in the order their files are written."""
    fits: list[tuple[str, LinearFit | None]] = [
        ("target WISP Eq. 19", result.wisp),
        ("target Zhu Eq. 17", result.zhu),
        (f"target Zhu Eq. 17 {PRINTED}", result.zhu_printed),
    ]
    draft = result.draft
    if draft is not None:
        fits += [
            (f"draft {draft.name} WISP", draft.wisp),
            (f"draft {draft.name} Zhu", draft.zhu),
            (f"draft {draft.name} Zhu {PRINTED}", draft.zhu_printed),
        ]
    return [(label, fit) for label, fit in fits if fit is not None]


def print_summary(console: Any, result: Any, paths: list[Path]) -> None:
    """Print ``result``'s summary (the module docstring) on ``console``; ``paths``: the
    files written."""
    from edgespec.profiling.profile_yaml import clipped_line

    fits = summary_fits(result)
    console.print(_fit_table(result, fits))
    n_train = sum(1 for c in result.grid if c.split == "train")
    console.print(
        f"{len(result.grid)} configurations ({n_train} train, {len(result.grid) - n_train} "
        f"held out), {len(result.samples)} timed batches, {result.num_prompts} unique prompts; "
        f"load average {' '.join(f'{x:.2f}' for x in result.load_average)}"
    )
    if result.draft is not None:
        console.print(f"drafter {result.draft.name}: {result.draft.per_token_s * 1e3:.3f} ms/token")
        batched = [s for s in result.draft.samples if s.batched]
        if batched:
            sizes = ", ".join(str(b) for b in sorted({s.batch_size for s in batched}))
            console.print(
                f"drafter {result.draft.name} batched: {len(batched)} timed calls at b = "
                f"{sizes} sessions (its Zhu fits are over them)"
            )
    for label, fit in fits:
        if fit.clipped:
            console.print(f"{label}: {clipped_line(fit)}")
    for path in paths:
        console.print(f"wrote {path}")


def _fit_table(result: Any, fits: list[tuple[str, LinearFit]]) -> Any:
    """A row per term of each fit: its value and interval; the fit's held-out metrics."""
    from rich.table import Table

    table = Table(title=f"edgespec profile: {result.target} on {result.hardware}")
    for col in ("fit", "term", "value", "95% CI", "held-out R² / MAE ms / MAPE %"):
        table.add_column(col)
    for label, fit in fits:
        (r_lo, r_hi), (m_lo, m_hi), (p_lo, p_hi) = fit.test_intervals
        t = fit.test
        quality = (
            f"{t.r2:.3f} [{r_lo:.3f}, {r_hi:.3f}] / {t.mae_s * 1e3:.3f} "
            f"[{m_lo * 1e3:.3f}, {m_hi * 1e3:.3f}] / {t.mape_pct:.1f} [{p_lo:.1f}, {p_hi:.1f}]"
        )
        rows = zip(fit.names, fit.values, fit.intervals, strict=True)
        for i, (name, value, (low, high)) in enumerate(rows):
            table.add_row(
                label if i == 0 else "",
                name,
                f"{value:.3e}",
                f"[{low:.2e}, {high:.2e}]",
                quality if i == 0 else "",
            )
    return table
