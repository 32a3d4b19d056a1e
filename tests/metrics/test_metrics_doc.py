"""docs/METRICS.md's definitions table and run-folder columns name what the code writes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from edgespec.metrics.sinks import REQUEST_DERIVED
from edgespec.metrics.types import BatchSizeCount, LatencyStats, SloClassStats, SystemMetrics

DOC = (Path(__file__).resolve().parents[2] / "docs" / "METRICS.md").read_text()


def _names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _table_rows() -> list[tuple[str, str]]:
    """(key cell, definition cell) of the ``| key | definition |`` table."""
    section = DOC.split("## Definitions", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (`.+?`) \| (.+) \|$", section, re.MULTILINE)
    return [(key, text) for key, text in rows if key != "key"]


def test_every_key_of_the_definitions_table_is_a_metrics_field() -> None:
    fields = set(_names(SystemMetrics))
    keys = [k.removesuffix("[]") for cell, _ in _table_rows() for k in re.findall(r"`(.+?)`", cell)]
    assert keys and set(keys) <= fields, sorted(set(keys) - fields)


def test_every_metrics_field_is_a_key_of_the_definitions_table() -> None:
    """metrics.json is "the table above": each of its keys has a row."""
    keys = {k.removesuffix("[]") for cell, _ in _table_rows() for k in re.findall(r"`(.+?)`", cell)}
    assert [name for name in _names(SystemMetrics) if name not in keys] == []


def test_nested_fields_the_table_lists_are_the_records_fields() -> None:
    rows = dict(_table_rows())
    latency = rows["`ttft`, `service_ttft`, `tpot`, `e2e`"]
    assert all(f"`{name}`" in latency for name in _names(LatencyStats))
    classes = rows["`slo_classes[]`"]
    assert all(f"`{name}`" in classes for name in _names(SloClassStats))
    sizes = rows["`num_batches`, `mean_batch_size`, `batch_sizes[]`"]
    assert all(f"`{name}`" in sizes or name in sizes for name in _names(BatchSizeCount))


def test_requests_csv_derived_columns_are_those_the_doc_lists() -> None:
    listed = re.search(r"field, then `([a-z0-9_, ]+)`", DOC)
    assert listed is not None
    assert tuple(listed.group(1).split(", ")) == REQUEST_DERIVED
