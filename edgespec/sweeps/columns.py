"""sweep.csv's columns: a run's metrics record flattened to dotted columns (:func:`flatten`),
each with the place it takes among every row's columns (:data:`Rank`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from types import MappingProxyType
from typing import Any, get_args, get_type_hints

from edgespec.metrics.types import SystemMetrics

LIST_KEYS: Mapping[str, str] = MappingProxyType(
    {"slo_classes": "slo_class", "batch_sizes": "batch_size"}
)
"""The field that names an entry of a metrics list of records (dotted path → field): the
entry's columns are ``<list>.<that field's value>.<other field>`` (``batch_sizes.32.
num_batches``, ``slo_classes.c1.attainment``), so a column means one entry in every row,
whichever entries a run has."""


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts/lists → ``a.b`` keys with scalar values: a list of records by the
    :data:`LIST_KEYS` field of each entry, a list of scalars by position
    (``server_utilization.0`` is server 0's). ``ValueError`` for a list of records with no
    key field, an entry without it, or two entries, or two values, under one key."""
    return {column: value for column, (value, _) in ranked(data, prefix, ()).items()}


Rank = tuple[tuple[int, Any], ...]
"""Where a column goes among every row's: a field by its place in its record, a list's
entry by its key (numbers before names), so a column new in a later row lands in order."""


def ranked(data: Mapping[str, Any], prefix: str, rank: Rank) -> dict[str, tuple[Any, Rank]]:
    """:func:`flatten`'s columns, each value with its column's :data:`Rank`."""
    flat: dict[str, tuple[Any, Rank]] = {}
    for position, (key, value) in enumerate(data.items()):
        name, here = f"{prefix}{key}", (*rank, (0, position))
        if isinstance(value, Mapping):
            items = ranked(value, f"{name}.", here)
        elif isinstance(value, list):
            items = {}
            for label, order, entry in _entries(name, value):
                items.update(ranked({label: entry}, f"{name}.", (*here, order)))
        else:
            items = {name: (value, here)}
        for column, cell in items.items():
            if column in flat:
                raise ValueError(f"two values for column {column!r}")
            flat[column] = cell
    return flat


def _entries(name: str, values: list[Any]) -> list[tuple[str, tuple[int, Any], Any]]:
    """The list ``name`` as (label, order, entry): scalars by position, records by their
    key field (:data:`LIST_KEYS`; the field itself left out, its value is the label)."""
    if not any(isinstance(value, Mapping) for value in values):
        return [(str(i), (0, i), value) for i, value in enumerate(values)]
    field = LIST_KEYS.get(name)
    if field is None:
        raise ValueError(f"{name}: a list of records with no key field in LIST_KEYS")
    entries: dict[str, tuple[str, tuple[int, Any], Any]] = {}
    for value in values:
        if not isinstance(value, Mapping) or field not in value:
            raise ValueError(f"{name}: entry {value!r} has no {field}")
        key, label = value[field], str(value[field])
        if label in entries:
            raise ValueError(f"{name}: two entries with {field} {label}")
        number = isinstance(key, int | float) and not isinstance(key, bool)
        order = (0, key) if number else (1, label)
        entries[label] = (label, order, {k: v for k, v in value.items() if k != field})
    return list(entries.values())


def columns_record(metrics: SystemMetrics) -> dict[str, Any]:
    """``metrics.to_dict()`` with each null record (``ttft``, ``tpot``, ``time_split``...
    of a run that finished no request) as its fields, each null: the row then has the
    columns every row has (``ttft.p99_s``), whether or not its run finished a request."""
    data = metrics.to_dict()
    hints = get_type_hints(SystemMetrics)
    for name, value in data.items():
        kinds = [k for k in get_args(hints[name]) if is_dataclass(k)]
        if value is None and kinds:
            data[name] = {f.name: None for f in fields(kinds[0])}
    return data


def cell(value: Any) -> Any:
    """A swept value as a CSV cell: a list or mapping as JSON, a scalar as it is."""
    if isinstance(value, list | dict):
        return json.dumps(value)
    return value
