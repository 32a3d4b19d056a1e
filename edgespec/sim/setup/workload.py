"""Workload: request traces (two JSONL schemas), length tables, arrival sampling.

edgespec trace schema (DESIGN.md), one JSON object per line::

    {"request_id": "r0", "arrival_ms": 5.3, "prompt_tokens": 27, "output_tokens": 94,
     "drafter_id": 38, "slo_class": "silver", "acceptance_seq": [1, 0, 1, ...]}

DSD-Sim's schema is read too: output length from ``target_tokens`` (or
``output_length``), prompt length from ``prompt_length``, arrival from
``arrivaltime_ms`` / ``arrival_time_ms``, the device from ``metadata.client_id``.
Length fields may be counts or token-id lists (their length is used). A client id that
is an integer (or an integer string) maps to device ``id % num_devices``; any other
string maps through CRC-32, so the mapping is stable across runs. A field neither schema
has, or one given under two spellings, is refused (:mod:`.trace_fields`).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from edgespec.config import ConfigFileError, RecordError, as_written, read_jsonl
from edgespec.config.overrides import shown
from edgespec.core.features import FeatureRows, parse_feature_rows, parse_rejection_rows
from edgespec.core.sampling_cuts import SamplingCuts
from edgespec.core.tree import parse_branching
from edgespec.errors import did_you_mean
from edgespec.sim.model.entities import TreeRound
from edgespec.sim.setup.trace_fields import (
    ARRIVAL_KEYS,
    CLIENT_KEYS,
    OUTPUT_KEYS,
    PROMPT_KEYS,
    acceptance_values,
    check_trace_fields,
    given_value,
    probabilities_value,
    row_entries_value,
    sampling_cuts,
    temperature_value,
)
from edgespec.sim.setup.workload_config import MAX_RECORD_TOKENS


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One request of a replayed trace."""

    request_id: str
    arrival_s: float
    num_prompt_tokens: int
    num_output_tokens: int
    client_id: str
    slo_class: str | None = None
    acceptance_seq: tuple[int, ...] | None = None
    temperature: float = 0.0
    """The temperature its capture sampled at (0: greedy, or not recorded)."""
    cuts: SamplingCuts = field(default_factory=SamplingCuts)
    """The cuts its capture sampled with (none: not recorded)."""
    acceptance_prob: tuple[float, ...] | None = None
    """A sampled capture's α per output position (``None``: not recorded)."""
    draft_row_entries: tuple[int, ...] | None = None
    """A sampled capture's kept entries of the draft's row per output position."""
    tree_rounds: tuple[TreeRound, ...] | None = None
    """A token-tree trace's rounds as captured: (nodes sent, draft tokens accepted, draft
    passes: the tree's depth)."""
    draft_features: FeatureRows | None = None
    """Per output position, the draft-logit features a stop predictor reads (trace.py)."""
    rejection_features: Mapping[int, FeatureRows] | None = None
    """By rejected output position, the features of the positions the draft drafts on its
    own tokens after it (learn/traces/records.py ``rejection_features``)."""
    where: str = field(default="", compare=False)
    """The record's ``file:line`` in its trace (empty for one not read from a file)."""

    def device_index(self, num_devices: int) -> int:
        """A whole-number id's device is ``id % num_devices``; any other id's its CRC-32's."""
        cid = self.client_id.strip()
        if cid.removeprefix("-").isdecimal():  # the digits int() reads ('²' is none)
            return int(cid) % num_devices
        return zlib.crc32(cid.encode()) % num_devices


def _first(record: Mapping[str, Any], keys: tuple[str, ...], where: str) -> Any:
    for key in keys:
        if key in record:
            return record[key]
    raise RecordError(where, f"missing field; expected one of {list(keys)}", keys[0])


def _count(value: Any, where: str, field: str, minimum: int) -> int:
    if isinstance(value, list):
        value = len(value)
    if isinstance(value, bool) or not isinstance(value, int):
        expected = f"an integer >= {minimum} or a token list"
    elif not minimum <= value <= MAX_RECORD_TOKENS:
        expected = f"an integer in [{minimum}, {MAX_RECORD_TOKENS:,}]"
    else:
        return value
    raise RecordError(where, f"expected {expected}, got {shown(as_written(value), 40)}", field)


def _name(value: Any, where: str, field: str, *also: type) -> str:
    """A record's id or class: a string (or one of ``also``'s types, an integer id), as a
    string; anything else (null, a bool, a list, an object) a RecordError naming the
    field: it was taken as its printed form (``null`` a client named "None")."""
    kinds = (str, *also)
    if isinstance(value, bool) or not isinstance(value, kinds):
        expected = "a string" + (" or an integer" if also else "")
        raise RecordError(where, f"expected {expected}, got {shown(as_written(value), 40)}",
                          field)  # fmt: skip
    return str(value)


def _arrival_ms(value: Any, where: str) -> float:
    """A record's arrival time: a finite number >= 0 (not JSON's NaN or Infinity, nor an
    integer past a float's range), else a RecordError naming the line and field."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    try:
        ok = ok and math.isfinite(value) and value >= 0
    except OverflowError:  # an integer too large for a float
        ok = False
    if not ok:
        got = shown(as_written(value), 40)
        raise RecordError(where, f"expected a finite number >= 0, got {got}", "arrival_ms")
    return float(value)


def parse_trace_record(record: Any, where: str, line_id: str | None = None) -> TraceEntry:
    """One trace line (either schema) → :class:`TraceEntry`; errors name line and field
    (an unknown field, or one given twice: :func:`.trace_fields.check_trace_fields`)."""
    if not isinstance(record, Mapping):
        raise RecordError(where, f"expected a JSON object, got {type(record).__name__}")
    check_trace_fields(record, where)
    arrival = _arrival_ms(_first(record, ARRIVAL_KEYS, where), where)
    prompt = _count(_first(record, PROMPT_KEYS, where), where, "prompt_tokens", 1)
    output = _count(_first(record, OUTPUT_KEYS, where), where, "output_tokens", 1)
    if not isinstance(record.get("metadata", {}), Mapping):  # its client_id's place
        raise RecordError(where, "expected a JSON object", "metadata")
    client = _name(given_value(record, CLIENT_KEYS, 0), where, "client_id", int)
    raw = record.get("acceptance_seq")
    seq = None if raw is None else acceptance_values(raw, where)
    slo = _name(record.get("slo_class", ""), where, "slo_class") or None
    rid = _name(record.get("request_id", record.get("id", "")), where, "request_id", int) or None
    tree_rounds = _tree_rounds(record, output, where)
    features, after = _features(record, output, where, rid)
    return TraceEntry(
        request_id=str(rid) if rid is not None else line_id or where,
        arrival_s=arrival / 1000.0,
        num_prompt_tokens=prompt,
        num_output_tokens=output,
        client_id=str(client),
        slo_class=str(slo) if slo is not None else None,
        acceptance_seq=seq,
        temperature=temperature_value(record.get("temperature", 0.0), where),
        cuts=sampling_cuts(record, where),
        acceptance_prob=probabilities_value(record, where, output),
        draft_row_entries=row_entries_value(record, where, output),
        tree_rounds=tree_rounds,
        draft_features=features,
        rejection_features=after,
        where=where,
    )


def _features(
    record: Mapping[str, Any], num_output: int, where: str, request_id: object
) -> tuple[FeatureRows | None, dict[int, FeatureRows] | None]:
    """A trace line's ``draft_features`` (one row per output position) and
    ``rejection_features`` (by rejected position), when present; an error names the row,
    the feature and the line's request (as the trace reader of ``edgespec train`` does)."""
    rows = after = None
    request = "" if request_id is None else f" (request {shown(str(request_id), 40)})"
    try:
        raw = record.get("draft_features")
        rows = None if raw is None else parse_feature_rows(raw, num_output)
    except ValueError as exc:
        raise RecordError(where, f"{exc}{request}", "draft_features") from exc
    try:
        raw = record.get("rejection_features")
        after = None if raw is None else dict(parse_rejection_rows(raw))
    except ValueError as exc:
        raise RecordError(where, f"{exc}{request}", "rejection_features") from exc
    return rows, after


def _tree_rounds(
    record: Mapping[str, Any], num_output: int, where: str
) -> tuple[TreeRound, ...] | None:
    """A token-tree trace line's rounds (``draft_tree`` set), else None."""
    branching = record.get("draft_tree")
    if branching is None:
        return None
    try:
        depths = len(parse_branching(str(branching)))
    except ValueError as exc:
        raise RecordError(where, str(exc), "draft_tree") from exc
    raw = record.get("rounds")
    if not isinstance(raw, list) or not raw:
        raise RecordError(where, "a token-tree trace needs its captured rounds", "rounds")
    gamma_max = record.get("gamma_max")
    deepest = max(depths, gamma_max) if type(gamma_max) is int else depths
    rounds = tuple(_tree_round(row, deepest, where, f"rounds[{i}]") for i, row in enumerate(raw))
    committed = 0
    for i, (nodes, accepted, _) in enumerate(rounds):
        if nodes == 0 and num_output - committed >= 2:  # not the budget's last token
            raise RecordError(
                where,
                f"verifies no nodes with {num_output - committed} tokens left to generate: "
                "a tree round drafts at least one node until the budget's last token",
                f"rounds[{i}]",
            )
        committed += accepted + 1
    if committed < num_output:
        raise RecordError(
            where, f"commit {committed} tokens, fewer than {num_output} output tokens", "rounds"
        )
    return rounds


def _tree_round(row: Any, deepest: int, where: str, field_name: str) -> TreeRound:
    """One captured tree round ``[nodes, accepted, draft_ms, verify_ms, passes]``: its draft
    passes are the tree's depth (one more where pruning left the next depth empty); a row
    without them (an older capture) is taken to be as deep as the trace's γ_max allows
    (``deepest``: the branching, one node a depth beyond it), and its nodes."""
    ok = isinstance(row, list) and len(row) >= 2 and all(type(v) is int for v in row[:2])
    ok = ok and (len(row) < 5 or type(row[4]) is int)
    if ok:
        nodes, accepted = int(row[0]), int(row[1])
        passes = int(row[4]) if len(row) >= 5 else min(nodes, deepest)
        fits = 0 <= accepted <= min(nodes, passes) and passes <= nodes + 1
        if fits and (passes > 0) == (nodes > 0):
            return nodes, accepted, passes
    raise RecordError(
        where,
        "expected [nodes, accepted, draft_ms, verify_ms, passes] with 0 <= accepted <= "
        "min(nodes, passes), 1 <= passes <= nodes + 1 (0 and 0 for an empty block; passes: "
        f"the tree's draft passes; not given, min(nodes, {deepest}))",
        field_name,
    )


def load_trace(path: str | Path) -> tuple[TraceEntry, ...]:
    """Read a JSONL trace (either schema), sorted by arrival (stable for ties). A line
    without a request id is named by the file's base name and its line (``t.jsonl:3``: the
    same wherever the file lies; its errors name the path as given)."""
    file = Path(path)
    entries = [
        parse_trace_record(obj, where, f"{file.name}:{where.rpartition(':')[2]}")
        for where, obj in read_jsonl(file, "trace file")
    ]
    if not entries:
        raise ConfigFileError(str(file), "trace holds no requests")
    first_at: dict[str, str] = {}
    for entry in entries:  # a request's records (and a tree's rounds) are found by its id
        first = first_at.setdefault(entry.request_id, entry.where)
        if first != entry.where:
            message = f"{entry.request_id!r} is the id of {first} already: ids must be unique"
            raise RecordError(entry.where, message, "request_id")
    return tuple(sorted(entries, key=lambda e: e.arrival_s))


def resolve_trace(name_or_path: str) -> Path:
    """A bundled trace name (``edgespec/data/traces/<name>.jsonl``) or a file path; for
    anything else a ConfigFileError listing the bundled traces, ending with the closest
    one's name when one is close (``gsm8``: ``(did you mean 'gsm8k'?)``)."""
    path = Path(name_or_path)
    if path.suffix == ".jsonl" or path.is_file():
        return path
    bundled = _bundled_traces_dir() / f"{name_or_path}.jsonl"
    if bundled.is_file():
        return bundled
    if path.exists():  # a folder or a device: read_jsonl says which
        return path
    names = [p.stem for p in bundled_traces()]
    raise ConfigFileError(
        name_or_path,
        f"no such trace file or bundled trace; bundled: {names}{did_you_mean(name_or_path, names)}",
    )


def _bundled_traces_dir() -> Path:
    return Path(str(resources.files("edgespec") / "data" / "traces"))


def bundled_traces() -> list[Path]:
    """The real acceptance traces shipped in ``edgespec/data/traces``, sorted by name."""
    folder = _bundled_traces_dir()
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
