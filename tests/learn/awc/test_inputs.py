"""`edgespec train awc` on a dataset missing a column (labels.parquet's, or the contexts'
in every file) or with a non-finite label weight: one line naming the file and what is
missing, exit 2, nothing written (was a KeyError traceback, or a NaN in the model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("pyarrow")

from edgespec.learn.awc.tables import write_parquet
from tests.learn.awc.test_train_finite import _dataset, _train

NEEDED = (
    "'scenario_id', 'queue_utilisation', 'recent_acceptance', 'rtt_ms', 'tpot_ms', 'previous_gamma'"
)


def _without(*names: str) -> Any:
    def drop(scenario: int, columns: dict[str, list[Any]]) -> None:
        for name in names:
            del columns[name]

    return drop


@pytest.mark.parametrize(
    ("names", "missing"),
    [
        (("scenario_id",), "column 'scenario_id'"),
        (("rtt_ms",), "column 'rtt_ms'"),
        (("tpot_ms", "scenario_id"), "columns 'scenario_id', 'tpot_ms'"),
    ],
)
def test_a_column_missing_from_every_contexts_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], names: tuple[str, ...], missing: str
) -> None:
    data, out = _dataset(tmp_path / "d", _without(*names)), tmp_path / "wc-dnn.json"
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'contexts'}: its Parquet files have no {missing}; "
        f"awc-data contexts have {NEEDED}\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("kept", "missing"),
    [
        ({"scenario_id": [0, 1]}, "column 'label_gamma'"),
        ({"label_gamma": [1, 2]}, "column 'scenario_id'"),
        ({"gamma": [1, 2]}, "columns 'scenario_id', 'label_gamma'"),
    ],
)
def test_a_column_missing_from_labels_parquet_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kept: dict[str, list[int]], missing: str
) -> None:
    data, out = _dataset(tmp_path / "d"), tmp_path / "wc-dnn.json"
    write_parquet(kept, data / "labels.parquet")
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'labels.parquet'}: no {missing}; "
        "an awc-data labels file has 'scenario_id', 'label_gamma'\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_label_weight_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], constant: str
) -> None:
    """Was copied into the model's metadata, which is strict JSON."""
    data, out = _dataset(tmp_path / "d"), tmp_path / "wc-dnn.json"
    (data / "labels.json").write_text(f'{{"weights": {{"ttft": {constant}}}}}')
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'labels.json'}: not an awc-data labels file "
        f"(ValueError('{constant} is not a JSON number'))\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("labels", "column", "row", "shown"),
    [
        (
            {"scenario_id": [0, 1, 2, 3, 4], "label_gamma": [1, 2, None, 4, None]},
            "label_gamma",
            2,
            "null",
        ),
        (
            {"scenario_id": [0, None, 2, 3, 4], "label_gamma": [1, 2, 3, 4, 1]},
            "scenario_id",
            1,
            "null",
        ),
    ],
)
def test_a_null_in_labels_parquet_is_refused_naming_column_and_row(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    labels: dict[str, list[Any]],
    column: str,
    row: int,
    shown: str,
) -> None:
    """A null label was a NaN label, reported as "training diverged (try a lower --lr)"; a
    null scenario id dropped its label silently."""
    data, out = _dataset(tmp_path / "d"), tmp_path / "wc-dnn.json"
    write_parquet(labels, data / "labels.parquet")
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'labels.parquet'}: column {column!r}, row {row} (from 0) is "
        f"{shown}; every row of an awc-data labels file has a scenario id and a finite label\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(("value", "shown"), [(float("nan"), "nan"), (float("-inf"), "-inf")])
def test_a_non_finite_label_in_a_float_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: float, shown: str
) -> None:
    """A labels file written by hand with a float label column: NaN trained into NaN."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data, out = _dataset(tmp_path / "d"), tmp_path / "wc-dnn.json"
    table = pa.table({"scenario_id": [0, 1, 2, 3, 4], "label_gamma": [1.0, 2.0, 3.0, value, 1.0]})
    pq.write_table(table, data / "labels.parquet")
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'labels.parquet'}: column 'label_gamma', row 3 (from 0) is "
        f"{shown}; every row of an awc-data labels file has a scenario id and a finite label\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("ids", "first", "again", "shown"),
    [([0, 1, 2, 1, 3, 2], 1, 3, "1"), ([4, 0, 1, 2, 3, 4, 4], 0, 5, "4")],
)
def test_a_scenario_id_labelled_twice_is_refused_naming_it_and_its_rows(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    ids: list[int],
    first: int,
    again: int,
    shown: str,
) -> None:
    """Was accepted: the scenario kept the label of its last row, silently."""
    data, out = _dataset(tmp_path / "d"), tmp_path / "wc-dnn.json"
    labels = {"scenario_id": ids, "label_gamma": [1 + k % 4 for k in range(len(ids))]}
    write_parquet(labels, data / "labels.parquet")
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'labels.parquet'}: scenario id {shown} is in rows {first} "
        f"and {again} (from 0); an awc-data labels file has one label per scenario\n"
    )
    assert not out.exists()
