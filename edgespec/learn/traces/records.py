"""Acceptance-trace records (DESIGN.md trace schema) and their JSONL form.

One line per request. The DSD-Sim fields (``request_id, arrival_ms, prompt_tokens,
output_tokens, drafter_id, slo_class``) come first; then what a real pair adds:

- ``acceptance_seq``: for every output position j, 1 if the draft's greedy token on the
  target's own prefix (prompt + output[:j]) equals the target's token j, else 0. Under
  greedy verification a round that starts at position s with window γ accepts exactly
  the run of 1s starting at s, capped at γ — so one sequence serves every γ, including
  γ_max (this is how :class:`edgespec.sim.model.acceptance.TraceAcceptance` replays it).
  A *feature draft* (edgespec/models/feature_draft.py) drafts its step s ≥ 2 from its own
  predicted features, so its tokens depend on where the round started and one flag per
  position cannot describe every γ: its ``acceptance_seq`` is built from the rounds it
  ran at ``gamma_max`` (L ones then a zero per round), which replays exactly at
  ``gamma_max`` and approximately below it. The same holds for a *token-tree* drafter
  (``edgespec trace --tree``): a position's outcome depends on which candidates the round's
  tree held.
- ``draft_features``: per output position, the draft-logit features of
  :mod:`edgespec.core.features` (``TRACE_FEATURE_NAMES``; the in-block ``position`` feature
  is left out because it depends on where a round starts). For a trimmed-vocabulary draft
  they are computed over its K kept tokens (the others have zero probability).
- ``rounds``: the rounds actually run at ``gamma_max`` (tokens drafted — for a token tree,
  its node count — accepted, draft and verify milliseconds, and, for a capture with a stop
  predictor or a token tree, a 5th element: the draft passes run, which count the token a
  stop predictor stopped on, and are a tree's depth), and
  ``sd_ms`` / ``target_only_ms`` / ``assisted_ms`` wall times. ``acceptance_seq`` and
  ``draft_features`` are computed on the target's prefix, whatever the stop predictor did.
- ``temperature``, the cuts that cut (``top_k``, ``top_p``, ``min_p``) and
  ``acceptance_prob`` (a sampled capture, ``edgespec trace --temperature T``; absent when
  greedy): the output was sampled at T, ``acceptance_seq``
  holds what the rounds drew (:func:`edgespec.learn.traces.acceptance.sampled_flags`), and
  ``acceptance_prob`` each position's α, the probability that stochastic verification
  accepts the draft's token there (4 decimals), and ``draft_row_entries`` the entries the
  draft's row q kept there (what a compact uplink row carries; the simulator charges their
  mean, :class:`edgespec.core.link_delay.DraftRows`).
- ``draft_tree``: for a token-tree drafter, its branching per depth (e.g. ``"3,3,2,1"``);
  the simulator then replays ``rounds`` as they ran (node counts verified and sent,
  accepted lengths) instead of ``acceptance_seq``. Sampled, a tree records its temperature
  and cuts but no ``acceptance_prob`` or ``draft_row_entries``: its nodes are proposed for
  certain (no q rows are sent), and a node's acceptance depends on the siblings drawn
  before it, so its rounds are what it replays.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.config import ConfigError, RecordError, read_jsonl
from edgespec.core.features import (
    FEATURE_DIGITS,
    FEATURE_NAMES,
    parse_feature_rows,
    parse_rejection_rows,
)
from edgespec.core.sampling_cuts import cuts_on
from edgespec.core.types import SamplingParams
from edgespec.learn.traces.json_line import json_line
from edgespec.learn.traces.record_fields import features_value, field_value, written_cuts
from edgespec.output_paths import write_atomically
from edgespec.sim.setup.trace_fields import (
    acceptance_values,
    cuts_value,
    probabilities_value,
    row_entries_value,
    temperature_value,
)

TRACE_FEATURE_NAMES: tuple[str, ...] = FEATURE_NAMES[:5]
PROB_DIGITS = 4
"""Decimals of ``acceptance_prob`` as written."""


@dataclass(frozen=True, slots=True)
class TraceRound:
    """One speculative round as run during capture. ``gamma``: tokens sent (verified);
    ``draft_passes``: draft forward passes run, ``None`` meaning ``gamma`` (a stop predictor
    runs one pass more than it sends when it ends a block early; a tree, one per depth)."""

    gamma: int
    num_accepted: int
    draft_ms: float
    verify_ms: float
    draft_passes: int | None = None

    @property
    def passes(self) -> int:
        return self.gamma if self.draft_passes is None else self.draft_passes


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One request of a captured trace (see the module docstring for field meanings)."""

    request_id: str
    arrival_ms: float
    prompt_tokens: int
    output_tokens: int
    drafter_id: int
    slo_class: str
    dataset: str
    draft_model: str
    target_model: str
    gamma_max: int
    acceptance_seq: tuple[int, ...]
    rounds: tuple[TraceRound, ...] = ()
    draft_features: tuple[tuple[float, ...], ...] | None = None
    sd_ms: float | None = None
    target_only_ms: float | None = None
    assisted_ms: float | None = None
    lossless: bool | None = None
    draft_tree: str | None = None
    rejection_features: tuple[tuple[int, tuple[tuple[float, ...], ...]], ...] | None = None
    """For each output position whose draft token the target rejects: (position, the
    feature rows of the next ``gamma_max`` − 1 positions the draft drafts on its own tokens
    after it) — what a stop predictor sees in the rest of a round that rejected there."""
    temperature: float = 0.0
    acceptance_prob: tuple[float, ...] | None = None
    """A sampled capture's α per output position (``temperature`` > 0), else ``None``."""
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    """A sampled capture's cuts (``edgespec trace --top-k/--top-p/--min-p``; off: no cut)."""
    draft_row_entries: tuple[int, ...] | None = None
    """A sampled capture's kept entries of the draft's row per output position."""

    def __post_init__(self) -> None:
        SamplingParams(self.temperature, self.top_p, top_k=self.top_k, min_p=self.min_p)
        if self.temperature == 0 and cuts_on(self.top_p, self.top_k, self.min_p):
            raise ValueError(f"{self.request_id}: top_k, top_p and min_p need a temperature > 0")
        if (self.acceptance_prob is not None) != (self.temperature > 0 and not self.draft_tree):
            raise ValueError(f"{self.request_id}: acceptance_prob comes with a temperature > 0 "
                             "and a chain draft (no draft_tree), and only then")  # fmt: skip
        if self.acceptance_prob is not None:
            if len(self.acceptance_prob) != self.output_tokens:
                raise ValueError(
                    f"{self.request_id}: acceptance_prob has {len(self.acceptance_prob)} "
                    f"entries for {self.output_tokens} output tokens"
                )
            if not all(0.0 <= a <= 1.0 for a in self.acceptance_prob):
                raise ValueError(f"{self.request_id}: acceptance_prob entries must be in [0, 1]")
        entries = self.draft_row_entries
        chain_rows = self.temperature > 0 and not self.draft_tree
        if entries is not None and (not chain_rows or len(entries) != self.output_tokens):
            raise ValueError(f"{self.request_id}: draft_row_entries come with a temperature > 0 "
                             "and a chain draft, one per output token")  # fmt: skip
        if len(self.acceptance_seq) != self.output_tokens:
            raise ValueError(
                f"{self.request_id}: acceptance_seq has {len(self.acceptance_seq)} entries "
                f"for {self.output_tokens} output tokens"
            )
        if self.draft_features is not None and len(self.draft_features) != self.output_tokens:
            raise ValueError(
                f"{self.request_id}: draft_features must have one row per output token"
            )

    @property
    def measured_mean_accepted(self) -> float | None:
        """Mean accepted draft tokens per round over the rounds actually run."""
        if not self.rounds:
            return None
        return sum(r.num_accepted for r in self.rounds) / len(self.rounds)


def _round(value: float, digits: int = 3) -> float:
    return round(float(value), digits)


def record_to_json(record: TraceRecord) -> dict[str, Any]:
    """A JSON-ready dict, DSD-Sim fields first; ``None`` fields are left out."""
    out: dict[str, Any] = {
        "request_id": record.request_id,
        "arrival_ms": _round(record.arrival_ms),
        "prompt_tokens": record.prompt_tokens,
        "output_tokens": record.output_tokens,
        "drafter_id": record.drafter_id,
        "slo_class": record.slo_class,
        "dataset": record.dataset,
        "draft_model": record.draft_model,
        "target_model": record.target_model,
        "gamma_max": record.gamma_max,
        "acceptance_seq": list(record.acceptance_seq),
        "rounds": [
            [r.gamma, r.num_accepted, _round(r.draft_ms), _round(r.verify_ms)]
            + ([] if r.draft_passes is None else [r.draft_passes])
            for r in record.rounds
        ],
    }
    if record.draft_features is not None:
        out["draft_features"] = [
            [_round(v, FEATURE_DIGITS) for v in row] for row in record.draft_features
        ]
    for key in ("sd_ms", "target_only_ms", "assisted_ms"):
        value = getattr(record, key)
        if value is not None:
            out[key] = _round(value)
    if record.lossless is not None:
        out["lossless"] = record.lossless
    if record.draft_tree is not None:
        out["draft_tree"] = record.draft_tree
    if record.temperature > 0:
        out["temperature"] = record.temperature
        out.update(written_cuts(record.top_p, record.top_k, record.min_p))
    if record.acceptance_prob is not None:
        out["acceptance_prob"] = [_round(a, PROB_DIGITS) for a in record.acceptance_prob]
    if record.draft_row_entries is not None:
        out["draft_row_entries"] = list(record.draft_row_entries)
    if record.rejection_features is not None:
        out["rejection_features"] = [
            [p, [[_round(v, FEATURE_DIGITS) for v in row] for row in rows]]
            for p, rows in record.rejection_features
        ]
    return out


ROUND_SHAPE = (
    "expected [gamma, accepted, draft_ms, verify_ms(, passes)]: whole numbers >= 0 with "
    "accepted <= gamma, finite milliseconds >= 0"
)


def _round_from_json(row: Any) -> TraceRound | None:
    """One ``rounds`` row, or ``None`` when it is not of :data:`ROUND_SHAPE`."""
    if not isinstance(row, list) or len(row) not in (4, 5):
        return None
    counts, times = [*row[:2], *row[4:]], row[2:4]
    whole = all(type(v) is int and v >= 0 for v in counts) and row[1] <= row[0]
    if not whole or not all(type(v) in (int, float) and math.isfinite(v) and v >= 0 for v in times):
        return None
    return TraceRound(row[0], row[1], float(row[2]), float(row[3]), row[4] if row[4:] else None)


def record_from_json(obj: Any, where: str) -> TraceRecord:
    """Parse one trace line; errors name the line and the field."""
    if not isinstance(obj, dict):
        raise RecordError(where, f"expected a JSON object, got {type(obj).__name__}")
    rounds_raw = obj.get("rounds", [])
    if not isinstance(rounds_raw, list):
        raise RecordError(where, f"expected a list of rounds, {ROUND_SHAPE}", "rounds")
    rounds = []
    for i, row in enumerate(rounds_raw):
        played = _round_from_json(row)
        if played is None:
            raise RecordError(where, ROUND_SHAPE, f"rounds[{i}]")
        rounds.append(played)
    seq = acceptance_values(field_value(obj, "acceptance_seq", list, where), where)
    request_id = str(field_value(obj, "request_id", str, where))
    feats = features_value(obj, "draft_features", parse_feature_rows, request_id, where)
    after = features_value(obj, "rejection_features", parse_rejection_rows, request_id, where)
    try:
        return TraceRecord(
            request_id=request_id,
            arrival_ms=float(field_value(obj, "arrival_ms", (int, float), where)),
            prompt_tokens=int(field_value(obj, "prompt_tokens", int, where)),
            output_tokens=int(field_value(obj, "output_tokens", int, where)),
            drafter_id=int(field_value(obj, "drafter_id", int, where)),
            slo_class=str(field_value(obj, "slo_class", str, where)),
            dataset=str(obj.get("dataset", "")),
            draft_model=str(obj.get("draft_model", "")),
            target_model=str(obj.get("target_model", "")),
            gamma_max=int(obj.get("gamma_max", 0)),
            acceptance_seq=seq,
            rounds=tuple(rounds),
            draft_features=feats,
            sd_ms=obj.get("sd_ms"),
            target_only_ms=obj.get("target_only_ms"),
            assisted_ms=obj.get("assisted_ms"),
            lossless=obj.get("lossless"),
            draft_tree=obj.get("draft_tree"),
            rejection_features=after,
            temperature=temperature_value(obj.get("temperature", 0.0), where),
            acceptance_prob=probabilities_value(obj, where),
            draft_row_entries=row_entries_value(obj, where),
            **cuts_value(obj, where),
        )
    except ConfigError:
        raise
    except ValueError as exc:
        raise RecordError(where, str(exc)) from exc


def write_trace(path: Path, records: Iterable[TraceRecord]) -> int:
    """Write records as JSONL (one compact object per line), whole or not at all; returns
    the count. Every line is made first (:func:`~edgespec.learn.traces.json_line.json_line`),
    so a NaN or infinity, which JSON cannot hold, is refused naming the field and the
    request before anything is written."""
    lines = [json_line(record_to_json(r), str(path), r.request_id) for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda fh: fh.writelines(lines))
    return len(lines)


def read_trace(path: Path) -> list[TraceRecord]:
    """Read a JSONL trace written by :func:`write_trace`."""
    return [record_from_json(obj, where) for where, obj in read_jsonl(path, "trace file")]
