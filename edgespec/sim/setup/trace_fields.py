"""The fields a trace line may have (edgespec's schema and DSD-Sim's), defined once: those
the simulator reads (:mod:`edgespec.sim.setup.workload`), some under several spellings, and
those ``edgespec trace`` records beside them that it does not read
(:func:`edgespec.learn.traces.records.record_to_json`). :func:`check_trace_fields` refuses
any other field, naming the line, the field and the closest known one: a misspelt optional
field (``acceptance_sq``, ``slo_clas``) ran as if it were absent. Two spellings of one
field (``arrival_ms`` and ``arrivaltime_ms``) are refused too: one of them was ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from edgespec.config import RecordError, as_written
from edgespec.core.sampling_cuts import (
    SamplingCuts,
    min_p_problem,
    top_k_problem,
    top_p_problem,
)
from edgespec.errors import did_you_mean

ARRIVAL_KEYS = ("arrival_ms", "arrivaltime_ms", "arrival_time_ms")
"""A trace record's arrival time, in milliseconds (edgespec's schema, then DSD-Sim's two
spellings)."""
PROMPT_KEYS = ("prompt_tokens", "prompt_length", "prompt_len")
OUTPUT_KEYS = ("output_tokens", "target_tokens", "output_length", "output_len")
ID_KEYS = ("request_id", "id")
CLIENT_KEYS = ("drafter_id", "draft_id", "metadata.client_id", "client_id")
"""The request's device: DSD-Sim's ``TraceRecord`` names its drafter ``draft_id``; its
bundled GSM8K trace's ``metadata`` object holds it as ``client_id``."""

SPELLINGS: Mapping[str, tuple[str, ...]] = {
    "the arrival time": ARRIVAL_KEYS,
    "the prompt length": PROMPT_KEYS,
    "the output length": OUTPUT_KEYS,
    "the request id": ID_KEYS,
    "the device": CLIENT_KEYS,
}
"""What a field says → its spellings (one record gives at most one of them)."""

SAMPLING_CUTS = ("top_k", "top_p", "min_p")
"""A sampled capture's cuts, written when they cut
(:func:`~edgespec.core.sampling_cuts.cuts_on`)."""

READ_KEYS = (
    *ARRIVAL_KEYS,
    *PROMPT_KEYS,
    *OUTPUT_KEYS,
    *ID_KEYS,
    *(key for key in CLIENT_KEYS if "." not in key),
    "metadata",
    "slo_class",
    "acceptance_seq",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "acceptance_prob",
    "draft_row_entries",
    "draft_tree",
    "rounds",
    "draft_features",
    "rejection_features",
)
"""The fields the simulator reads (``rounds``: a token-tree trace's, under ``draft_tree``;
``temperature`` and the cuts: the capture's, which ``edgespec sim`` compares with the
scenario's; ``acceptance_prob``: a sampled capture's α per position, which
``acceptance.sampled_draws: redrawn`` draws from; ``draft_row_entries``: its draft rows'
kept entries, whose mean a compact uplink row is charged)."""

RECORDED_KEYS = (
    "dataset",
    "draft_model",
    "target_model",
    "gamma_max",
    "sd_ms",
    "target_only_ms",
    "assisted_ms",
    "lossless",
)
"""The fields ``edgespec trace`` writes that the simulator does not read (docs/LEARN.md,
"Trace format"; a sampled trace's ``acceptance_seq`` holds what its rounds drew, and the
simulator replays it as any other)."""

DSDSIM_UNREAD_KEYS = ("device_tier", "mode_hint", "seed")
"""DSD-Sim's ``TraceRecord`` fields the simulator does not read: a pool tier (edgespec
places requests by device), a per-request mode hint and seed (the scenario's mode and seed
decide)."""

TRACE_KEYS = frozenset((*READ_KEYS, *RECORDED_KEYS, *DSDSIM_UNREAD_KEYS))
"""Every field a trace line may have."""


def _given(record: Mapping[str, Any], key: str) -> bool:
    outer, _, inner = key.partition(".")
    if not inner:
        return outer in record
    nested = record.get(outer)
    return isinstance(nested, Mapping) and inner in nested


def given_value(record: Mapping[str, Any], keys: tuple[str, ...], default: Any) -> Any:
    """The value of the one spelling in ``keys`` that ``record`` gives (``metadata.client_id``:
    inside ``metadata``), else ``default``."""
    for key in keys:
        if _given(record, key):
            outer, _, inner = key.partition(".")
            return record[outer][inner] if inner else record[outer]
    return default


def check_trace_fields(record: Mapping[str, Any], where: str) -> None:
    """Refuse a field of ``record`` (the trace line at ``where``, ``file:line``) that is not
    in :data:`TRACE_KEYS`, and a field given under two spellings (:data:`SPELLINGS`), with a
    :class:`RecordError` naming the line and the field: ``t.jsonl:3: acceptance_sq: unknown
    field; known: [...] (did you mean 'acceptance_seq'?)``."""
    for key in record:
        if key not in TRACE_KEYS:
            known = sorted(TRACE_KEYS)
            message = f"unknown field; known: {known}{did_you_mean(str(key), known)}"
            raise RecordError(where, message, str(key))
    for what, keys in SPELLINGS.items():
        given = [key for key in keys if _given(record, key)]
        if len(given) > 1:
            raise RecordError(
                where, f"gives {what}, which {given[0]} gives too; keep one of them", given[1]
            )


def acceptance_values(raw: Any, where: str) -> tuple[int, ...]:
    """A trace line's ``acceptance_seq``, one rule for every reader (the simulator's and
    :func:`edgespec.learn.traces.records.read_trace`): a non-empty list of 0/1 integers,
    one per output position (JSON's ``true``/``false`` are no acceptances), else a
    :class:`RecordError` naming the line and the field: an empty one would fail the run
    mid-way, at the request's first round."""
    ok = isinstance(raw, list) and all(type(v) is int and v in (0, 1) for v in raw)
    if not ok:
        raise RecordError(where, "must be a list of 0/1 integers", "acceptance_seq")
    if not raw:
        raise RecordError(
            where, "is empty; a trace holds one 0/1 per output position", "acceptance_seq"
        )
    return tuple(raw)


def temperature_value(raw: Any, where: str) -> float:
    """A trace line's ``temperature``, the one its capture sampled at (absent: 0, greedy):
    a number >= 0, else a :class:`RecordError` naming the line and the field."""
    ok = isinstance(raw, int | float) and not isinstance(raw, bool)
    if not ok or not 0 <= raw < math.inf:
        raise RecordError(where, f"expected a number >= 0, got {as_written(raw)}", "temperature")
    return float(raw)


def probabilities_value(
    obj: Mapping[str, Any], where: str, num_output: int | None = None
) -> tuple[float, ...] | None:
    """``acceptance_prob``: numbers in [0, 1] (``None`` when absent), one per output position
    when ``num_output`` is given."""
    raw = obj.get("acceptance_prob")
    if raw is None:
        return None
    ok = isinstance(raw, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1 for v in raw
    )
    if not ok:
        raise RecordError(where, "must be a list of numbers in [0, 1]", "acceptance_prob")
    if num_output is not None and len(raw) != num_output:
        message = f"has {len(raw)} entries for {num_output} output tokens"
        raise RecordError(where, message, "acceptance_prob")
    return tuple(float(v) for v in raw)


def row_entries_value(
    obj: Mapping[str, Any], where: str, num_output: int | None = None
) -> tuple[int, ...] | None:
    """``draft_row_entries``: a sampled capture's kept entries of the draft's row q at each
    output position, integers >= 1 (``None`` when absent), one per output position when
    ``num_output`` is given."""
    raw = obj.get("draft_row_entries")
    if raw is None:
        return None
    ok = isinstance(raw, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in raw
    )
    if not ok:
        raise RecordError(where, "must be a list of integers >= 1", "draft_row_entries")
    if num_output is not None and len(raw) != num_output:
        message = f"has {len(raw)} entries for {num_output} output tokens"
        raise RecordError(where, message, "draft_row_entries")
    return tuple(raw)


def cuts_value(obj: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A sampled capture's cuts as given (absent: off), each in the range
    :class:`~edgespec.core.types.SamplingParams` takes, else a RecordError naming the line
    and the cut."""
    given = {name: obj[name] for name in SAMPLING_CUTS if name in obj}
    for name, value in given.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number:
            raise RecordError(where, f"expected a number, got {as_written(value)}", name)
        if (problem := _CUT_PROBLEMS[name](value)) is not None:
            raise RecordError(where, problem, name)
    return given


_CUT_PROBLEMS: Mapping[str, Callable[[Any], str | None]] = {
    "top_k": top_k_problem,
    "top_p": top_p_problem,
    "min_p": min_p_problem,
}


def sampling_cuts(record: Mapping[str, Any], where: str) -> SamplingCuts:
    """A trace line's cuts (:func:`cuts_value`) as :class:`SamplingCuts`."""
    given = cuts_value(record, where)
    return SamplingCuts(given.get("top_k", 0), given.get("top_p", 1.0), given.get("min_p", 0.0))
