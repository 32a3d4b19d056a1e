"""A trace line's fields read as ``edgespec trace``'s records hold them
(:func:`edgespec.learn.traces.records.record_from_json`), each error a
:class:`~edgespec.config.RecordError` naming the line and the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from edgespec.config import RecordError, as_written
from edgespec.core.sampling_cuts import SamplingCuts

T = TypeVar("T")


def field_value(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """A required field of one of ``kind`` (a bool is no number)."""
    if key not in obj:
        raise RecordError(where, "missing field", key)
    value = obj[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(k.__name__ for k in kinds)
        raise RecordError(where, f"expected {expected}, got {as_written(value)}", key)
    return value


def features_value(
    obj: dict[str, Any], key: str, parse: Callable[[object], T], request_id: str, where: str
) -> T | None:
    """A feature field parsed (``None`` when absent); a malformed one, or a NaN or infinity
    in it, is refused naming the line, the field and the request."""
    raw = obj.get(key)
    try:
        return None if raw is None else parse(raw)
    except ValueError as exc:
        raise RecordError(where, f"{exc} (request {request_id})", key) from exc


def written_cuts(top_p: float, top_k: int, min_p: float) -> dict[str, Any]:
    """The cuts a record writes: those that cut."""
    return dict(SamplingCuts(top_k, top_p, min_p).cutting())
