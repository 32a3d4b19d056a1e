"""The AWC dataset's Parquet tables (``configs/``, ``contexts/``, ``labels.parquet``):
written atomically by ``edgespec train awc-data``, read by it and by ``edgespec train awc``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError

INT_COLUMNS = frozenset({"scenario_id", "gamma", "run_gamma", "num_requests", "label_gamma"})


def write_parquet(columns: dict[str, list[Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    table = pa.table(
        {
            name: pa.array(values, pa.int64() if name in INT_COLUMNS else pa.float64())
            for name, values in columns.items()
        }
    )
    pq.write_table(table, partial)
    os.replace(partial, path)  # atomic: a file there is complete


def read_parquet_dir(folder: Path) -> dict[str, list[Any]]:
    """Every ``*.parquet`` file of ``folder`` concatenated, as columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise UserInputError(f"{folder}: no Parquet files (run edgespec train awc-data)")
    table = pa.concat_tables([pq.read_table(f) for f in files])
    return {name: table.column(name).to_pylist() for name in table.column_names}


def read_parquet_file(path: Path) -> dict[str, list[Any]]:
    import pyarrow.parquet as pq

    if not path.is_file():
        raise UserInputError(f"{path}: no such file (run edgespec train awc-data)")
    table = pq.read_table(path)
    return {name: table.column(name).to_pylist() for name in table.column_names}
