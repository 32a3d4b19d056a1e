"""The AWC dataset's Parquet tables (``configs/``, ``contexts/``, ``labels.parquet``):
written atomically by ``edgespec train awc-data``, read by it and by ``edgespec train awc``.
A file that is not Parquet, or a folder whose files have different columns, is an error
naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.output_paths import write_atomically

INT_COLUMNS = frozenset({"scenario_id", "gamma", "run_gamma", "num_requests", "label_gamma"})


def write_parquet(columns: dict[str, list[Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            name: pa.array(values, pa.int64() if name in INT_COLUMNS else pa.float64())
            for name, values in columns.items()
        }
    )
    write_atomically(path, lambda fh: pq.write_table(table, fh))  # a file there is complete


def _read_table(path: Path) -> Any:
    """The table in ``path``; a file Arrow cannot read as Parquet is a :class:`UserInputError`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        reason = reason.replace(f"Could not open Parquet input source '{path}': ", "")
        raise UserInputError(f"{path}: not a readable Parquet file ({reason})") from exc


def read_parquet_dir(folder: Path) -> dict[str, list[Any]]:
    """Every ``*.parquet`` file of ``folder`` concatenated, as columns; every file must have
    the first one's columns."""
    import pyarrow as pa

    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise UserInputError(f"{folder}: no Parquet files (run edgespec train awc-data)")
    tables = [_read_table(f) for f in files]
    first = tables[0].schema
    for path, table in zip(files[1:], tables[1:], strict=True):
        if table.schema.equals(first):
            continue
        missing = [n for n in first.names if n not in table.schema.names]
        extra = [n for n in table.schema.names if n not in first.names]
        differ = [
            f"{n} ({table.schema.field(n).type}, not {first.field(n).type})"
            for n in first.names
            if n in table.schema.names and table.schema.field(n).type != first.field(n).type
        ]
        problems = [
            f"{label} {', '.join(names)}"
            for label, names in (("missing", missing), ("extra", extra), ("type of", differ))
            if names
        ]
        raise UserInputError(
            f"{path}: columns differ from {files[0].name}'s: {'; '.join(problems)}"
        )
    table = pa.concat_tables(tables)
    return {name: table.column(name).to_pylist() for name in table.column_names}


def read_parquet_file(path: Path) -> dict[str, list[Any]]:
    if not path.is_file():
        raise UserInputError(f"{path}: no such file (run edgespec train awc-data)")
    table = _read_table(path)
    return {name: table.column(name).to_pylist() for name in table.column_names}
