"""A trace record's line of JSONL text (:func:`json_line`), strict JSON so that every line
written can be read again: JSON has no NaN or infinity (``json.dumps`` writes a bare
``NaN``, which :func:`edgespec.learn.traces.records.read_trace` refuses), so one is refused
as a :class:`~edgespec.config.RecordError` naming the file, the field with its index, and
the request."""

from __future__ import annotations

import json
import math
from typing import Any

from edgespec.config import RecordError


def json_line(obj: dict[str, Any], where: str, request_id: str) -> bytes:
    """``obj``, a record's JSON-ready fields (numbers, strings, lists of them), as one
    compact UTF-8 line; a NaN or infinity in it is refused, ``where`` (the file it is for)
    first: ``t.jsonl: draft_features[4][2]: nan, expected a finite number (request r7);
    the trace is not written``."""
    for field, value in obj.items():
        found = _non_finite(value)
        if found is not None:
            at, number = found
            raise RecordError(
                where,
                f"{number}, expected a finite number (request {request_id}); the trace is "
                "not written",
                f"{field}{at}",
            )
    return (json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def _non_finite(value: Any) -> tuple[str, float] | None:
    """The first NaN or infinity in ``value`` (a number, or lists of them): its index path
    (``[4][2]``; ``""`` for ``value`` itself) and the number; ``None`` when there is none."""
    if isinstance(value, float) and not math.isfinite(value):
        return "", value
    for index, item in enumerate(value if isinstance(value, list) else ()):
        found = _non_finite(item)
        if found is not None:
            return f"[{index}]{found[0]}", found[1]
    return None
