"""What ``edgespec train awc`` reads from an ``awc-data`` folder (``--data``: a folder that
is not there, or not a folder, is refused first, :func:`check_data_folder`), checked before
training:
``labels.parquet`` (scenario id → label γ), ``labels.json``'s label weights and the
``contexts/`` (scenario id and the WC-DNN's features per decision). A missing column, a
null (or non-finite) label or scenario id, a scenario id labelled twice, an infinite
feature or a feature with no value is a one-line :class:`UserInputError` naming the file
(or folder), the column and, for a value, its row."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.errors import UserInputError
from edgespec.learn.awc.tables import read_parquet_dir, read_parquet_file
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES

LABEL_COLUMNS = ("scenario_id", "label_gamma")
"""The columns ``labels.parquet`` must have."""

CONTEXT_COLUMNS = ("scenario_id", *AWC_FEATURE_NAMES)
"""The columns every ``contexts/*.parquet`` file must have."""


def check_data_folder(folder: Path) -> None:
    """Refuse a ``--data`` that does not exist, or is not a folder, or holds simulated
    scenarios and no ``labels.parquet``, in one line."""
    if not folder.exists():
        raise UserInputError(
            f"--data {folder}: no such folder (give an awc-data --out folder: make one "
            "with edgespec train awc-data)"
        )
    if not folder.is_dir():
        raise UserInputError(f"--data {folder}: not a folder (give an awc-data --out folder)")
    simulated = len(list((folder / "configs").glob("s*.parquet")))
    if simulated and not (folder / "labels.parquet").exists():  # was: "run awc-data"
        raise UserInputError(
            f"--data {folder}: no labels.parquet beside its {simulated} simulated "
            f"scenario{'' if simulated == 1 else 's'} (the awc-data run that made them "
            "stopped before labelling, or labelled none): rerun that awc-data command, "
            "which labels them or says why it cannot"
        )


def read_labels(path: Path) -> dict[int, int]:
    """Scenario id → label γ, from ``labels.parquet`` at ``path``: a null in either column,
    or a label that is not a finite number, is refused naming the column and first row; a
    scenario id in two rows, naming the first such id and both rows."""
    table = read_parquet_file(path)
    _require_columns(table, LABEL_COLUMNS, f"{path}: no", "an awc-data labels file has")
    for name in LABEL_COLUMNS:
        row = next((i for i, value in enumerate(table[name]) if not _is_value(value)), None)
        if row is not None:
            raise UserInputError(
                f"{path}: column {name!r}, row {row} (from 0) is {_shown(table[name][row])}; "
                "every row of an awc-data labels file has a scenario id and a finite label"
            )
    labels: dict[int, int] = {}
    first_row: dict[int, int] = {}
    for row, (scenario, label) in enumerate(
        zip(table["scenario_id"], table["label_gamma"], strict=True)
    ):
        if scenario in first_row:
            raise UserInputError(
                f"{path}: scenario id {scenario} is in rows {first_row[scenario]} and {row} "
                "(from 0); an awc-data labels file has one label per scenario"
            )
        first_row[scenario], labels[scenario] = row, label
    return labels


def _is_value(value: Any) -> bool:
    """Not null (``None``) and, for a float, finite (a NaN label trains into NaN)."""
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


def _shown(value: Any) -> str:
    return "null" if value is None else str(value)


def read_contexts(folder: Path) -> dict[str, list[Any]]:
    """The contexts of ``folder`` (its Parquet files, concatenated), checked: the columns
    of :data:`CONTEXT_COLUMNS` there, each feature finite or NaN with a value somewhere."""
    contexts = read_parquet_dir(folder)  # every file has the first one's columns
    where = f"{folder}: its Parquet files have no"
    _require_columns(contexts, CONTEXT_COLUMNS, where, "awc-data contexts have")
    check_features(folder, contexts)
    return contexts


def _require_columns(
    columns: dict[str, list[Any]], needed: Sequence[str], missing_in: str, needed_in: str
) -> None:
    """``"<missing_in> column(s) 'a', 'b'; <needed_in> <needed>"`` when some are missing."""
    missing = [name for name in needed if name not in columns]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise UserInputError(
            f"{missing_in} column{plural} {', '.join(map(repr, missing))}; "
            f"{needed_in} {', '.join(map(repr, needed))}"
        )


def check_features(folder: Path, contexts: dict[str, list[Any]]) -> None:
    """No feature column all NaN, and no ±inf in one (NaN is a missing value, imputed): a
    bad value is refused naming its file, column and row."""
    for name in AWC_FEATURE_NAMES:
        values = np.asarray(contexts[name], dtype=np.float64)
        if values.size and np.isnan(values).all():
            raise UserInputError(f"{folder}: column {name!r} has no value (every row is NaN)")
        bad = np.flatnonzero(np.isinf(values))
        if bad.size:
            file, row = _row_file(folder, int(bad[0]))
            raise UserInputError(
                f"{file}: column {name!r}, row {row} (from 0) is {values[bad[0]]}; "
                "features must be finite numbers (NaN for a missing one)"
            )


def _row_file(folder: Path, row: int) -> tuple[Path, int]:
    """The file of ``folder`` (in :func:`read_parquet_dir`'s order) holding its ``row``-th
    row, and the row's place in that file."""
    import pyarrow.parquet as pq

    for path in sorted(folder.glob("*.parquet")):
        rows = pq.read_metadata(path).num_rows
        if row < rows:
            return path, row
        row -= rows
    raise IndexError(f"{folder} has no row {row}")


def label_weights(path: Path) -> Any:
    """The ``weights`` of ``labels.json`` (recorded in the model's metadata), read before
    training: a missing or malformed file is an error naming it, as is a non-finite number
    (``NaN``, ``Infinity``: the model's JSON is strict)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)["weights"]
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise UserInputError(f"{path}: not an awc-data labels file ({exc!r})") from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_two_labelled(
    folder: Path, scenario_ids: npt.NDArray[np.int64], labels: dict[int, int]
) -> None:
    """Two labelled scenarios with contexts at least (one is held out); the refusal says how
    many scenarios ``folder`` holds and how many of them are unlabelled (no configuration
    finished a request: awc-data gives them no label), and what gives more."""
    from edgespec.learn.awc.folder import finished_ids

    found = len(np.unique(scenario_ids))
    if found >= 2:
        return
    scenarios = finished_ids(folder)
    unlabelled = len(scenarios - set(labels))
    hint = (
        " (no configuration finished a request in them): a longer awc-data --duration-s "
        "gives them time (in a new --out)"
        if unlabelled
        else ": run awc-data with more --scenarios"
    )
    raise UserInputError(
        f"{folder}: need at least two labelled scenarios (one is held out), found {found}; "
        f"the folder holds {len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}, "
        f"{unlabelled} unlabelled{hint}"
    )
