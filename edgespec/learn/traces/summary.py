"""Aggregate captured trace records into the numbers `edgespec trace` reports."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.learn.traces.records import TraceRecord
from edgespec.learn.traces.replay import (
    replay_accepted_lengths,
    sent_acceptance,
    wasted_passes_per_round,
)
from edgespec.output_paths import write_text_atomically


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """Per-group totals. Speeds are output tokens per wall second; ``None`` when not run.

    ``measured_aal``: mean accepted draft tokens per round over the rounds actually run;
    ``replayed_aal``: the same recomputed from ``acceptance_seq`` at window ``gamma``;
    ``position_acceptance``: the share of 1s in ``acceptance_seq``; ``expected_acceptance``:
    a sampled capture's mean α per position (``acceptance_prob``; ``None`` when greedy),
    what ``position_acceptance`` estimates with the variance of the draws taken out;
    ``mean_row_entries``: the entries its draft rows kept per position on average
    (``draft_row_entries``, a compact uplink row's size; ``None`` when greedy).
    """

    name: str
    num_requests: int
    num_output_tokens: int
    num_rounds: int
    measured_aal: float
    replayed_aal: float
    position_acceptance: float
    expected_acceptance: float | None
    mean_row_entries: float | None
    sd_tokens_per_s: float | None
    target_tokens_per_s: float | None
    assisted_tokens_per_s: float | None
    mean_draft_ms_per_token: float | None
    all_lossless: bool | None

    @property
    def speedup_vs_target(self) -> float | None:
        if self.sd_tokens_per_s is None or not self.target_tokens_per_s:
            return None
        return self.sd_tokens_per_s / self.target_tokens_per_s

    @property
    def speedup_vs_assisted(self) -> float | None:
        if self.sd_tokens_per_s is None or not self.assisted_tokens_per_s:
            return None
        return self.sd_tokens_per_s / self.assisted_tokens_per_s


def _speed(records: Sequence[TraceRecord], attr: str) -> float | None:
    times = [getattr(r, attr) for r in records]
    if not records or any(t is None for t in times):
        return None
    total_ms = sum(float(t) for t in times)
    return sum(r.output_tokens for r in records) / (total_ms / 1e3) if total_ms > 0 else None


def summarize_traces(
    name: str, records: Sequence[TraceRecord], gamma: int, max_new_tokens: int | None = None
) -> TraceSummary:
    """Totals over ``records`` (speeds are total tokens / total time, not means of ratios);
    the replay caps windows at the token budget when ``max_new_tokens`` is given."""
    rounds = [r for rec in records for r in rec.rounds]
    replayed = [
        n
        for rec in records
        for n in replay_accepted_lengths(rec.acceptance_seq, gamma, max_new_tokens)
    ]
    flags = [f for rec in records for f in rec.acceptance_seq]
    alphas = [a for rec in records for a in rec.acceptance_prob or ()]
    entries = [n for rec in records for n in rec.draft_row_entries or ()]
    drafted = sum(r.gamma for r in rounds)
    draft_ms = sum(r.draft_ms for r in rounds)
    lossless_flags = [rec.lossless for rec in records if rec.lossless is not None]
    return TraceSummary(
        name=name,
        num_requests=len(records),
        num_output_tokens=sum(rec.output_tokens for rec in records),
        num_rounds=len(rounds),
        measured_aal=sum(r.num_accepted for r in rounds) / len(rounds) if rounds else 0.0,
        replayed_aal=sum(replayed) / len(replayed) if replayed else 0.0,
        position_acceptance=sum(flags) / len(flags) if flags else 0.0,
        expected_acceptance=sum(alphas) / len(alphas) if alphas else None,
        mean_row_entries=sum(entries) / len(entries) if entries else None,
        sd_tokens_per_s=_speed(records, "sd_ms"),
        target_tokens_per_s=_speed(records, "target_only_ms"),
        assisted_tokens_per_s=_speed(records, "assisted_ms"),
        mean_draft_ms_per_token=draft_ms / drafted if drafted else None,
        all_lossless=all(lossless_flags) if lossless_flags else None,
    )


def summarize_by_dataset(
    records: Sequence[TraceRecord], gamma: int, max_new_tokens: int | None = None
) -> list[TraceSummary]:
    """One summary per dataset (in first-seen order) and one for everything (``all``)."""
    names = list(dict.fromkeys(r.dataset for r in records))
    out = [
        summarize_traces(n, [r for r in records if r.dataset == n], gamma, max_new_tokens)
        for n in names
    ]
    if len(names) > 1:
        out.append(summarize_traces("all", records, gamma, max_new_tokens))
    return out


def write_summary_json(
    path: Path, records: Sequence[TraceRecord], gamma: int, max_new_tokens: int, title: str
) -> None:
    """``edgespec trace --json``: the summary per dataset (and ``all``), with the speed-ups
    over target-only decoding and assisted generation, as JSON."""
    rows = [
        {
            **dataclasses.asdict(s),
            "speedup_vs_target": s.speedup_vs_target,
            "speedup_vs_assisted": s.speedup_vs_assisted,
        }
        for s in summarize_by_dataset(records, gamma, max_new_tokens)
    ]
    report = {"title": title, "gamma": gamma, "max_new_tokens": max_new_tokens, "summary": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(report, indent=2) + "\n")


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_summary_table(
    console: Any, records: list[Any], gamma: int, max_new_tokens: int, title: str
) -> None:
    """Print `edgespec trace`'s per-dataset table to a rich ``console``. "sent acc.": accepted /
    sent draft tokens; "wasted / round": draft passes per round that gave no
    accepted token (WISP Eq. 7's W in passes). A sampled capture's table has "exp. acc."
    (its mean α) in place of "lossless" (a sampled output equals no other draw)."""
    from rich.table import Table

    sampled = any(r.temperature > 0 for r in records)
    table = Table(title=title)
    for col in (
        "dataset", "requests", "out tokens", "rounds", "AAL", "AAL replay", "sent acc.",
        "wasted / round", "pos. acc.", *(("exp. acc.",) if sampled else ()), "draft ms/tok",
        "SD tok/s", "target tok/s", "assisted tok/s", "× target", "× assisted",
        *(() if sampled else ("lossless",)),
    ):  # fmt: skip
        table.add_column(col, justify="right")
    for s in summarize_by_dataset(records, gamma, max_new_tokens):
        rounds = [x for r in records if s.name in ("all", r.dataset) for x in r.rounds]
        lossless = "-" if s.all_lossless is None else str(s.all_lossless)
        table.add_row(
            s.name,
            str(s.num_requests),
            str(s.num_output_tokens),
            str(s.num_rounds),
            _fmt(s.measured_aal),
            _fmt(s.replayed_aal),
            _fmt(sent_acceptance(rounds), 3),
            _fmt(wasted_passes_per_round(rounds)),
            _fmt(s.position_acceptance, 3),
            *((_fmt(s.expected_acceptance, 3),) if sampled else ()),
            _fmt(s.mean_draft_ms_per_token, 1),
            _fmt(s.sd_tokens_per_s),
            _fmt(s.target_tokens_per_s),
            _fmt(s.assisted_tokens_per_s),
            _fmt(s.speedup_vs_target),
            _fmt(s.speedup_vs_assisted),
            *(() if sampled else (lossless,)),
        )
    console.print(table)
