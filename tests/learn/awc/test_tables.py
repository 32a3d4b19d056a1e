"""The AWC dataset's Parquet tables (edgespec.learn.awc.tables): a file that is not Parquet,
or one whose columns differ from its folder's others, is one line naming the file; every
file (tables and the trained weights) is written whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.learn.awc import tables
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES


def _dataset(root: Path, scenarios: int = 4, rows: int = 6) -> Path:
    """An ``awc-data`` folder: contexts of ``scenarios`` scenarios, their labels."""
    for s in range(scenarios):
        columns: dict[str, list[Any]] = {"scenario_id": [s] * rows, "run_gamma": [4] * rows}
        for i, name in enumerate(AWC_FEATURE_NAMES):
            columns[name] = [0.1 * (s + i + r) for r in range(rows)]
        tables.write_parquet(columns, root / "contexts" / f"s{s:05d}.parquet")
    labels = {
        "scenario_id": list(range(scenarios)),
        "label_gamma": [1 + s % 4 for s in range(scenarios)],
    }
    tables.write_parquet(labels, root / "labels.parquet")
    (root / "labels.json").write_text(json.dumps({"weights": {"ttft": 0.5, "tpot": 0.5}}))
    return root


def _train(data: Path, out: Path) -> int:
    return main(["train", "awc", "--data", str(data), "--out", str(out), "--epochs", "1"])


def test_a_cut_off_parquet_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "data")
    cut = data / "contexts" / "s00002.parquet"
    cut.write_bytes(cut.read_bytes()[:100])
    assert _train(data, tmp_path / "w.json") == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {cut}: not a readable Parquet file (Parquet magic bytes not found in "
        "footer. Either the file is corrupted or this is not a parquet file.)\n"
    )
    (data / "labels.parquet").write_text("scenario_id,label_gamma\n")
    with pytest.raises(UserInputError, match=r"labels\.parquet: not a readable Parquet file"):
        tables.read_parquet_file(data / "labels.parquet")


def test_a_file_with_other_columns_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "data")
    odd = data / "contexts" / "s00001.parquet"
    columns = tables.read_parquet_file(odd)
    del columns["tpot_ms"], columns["rtt_ms"]
    columns["extra"] = columns["run_gamma"]
    tables.write_parquet(columns, odd)
    assert _train(data, tmp_path / "w.json") == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {odd}: columns differ from s00000.parquet's: missing rtt_ms, "
        "tpot_ms; extra extra\n"
    )


def test_a_column_of_another_type_is_named(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = _dataset(tmp_path / "data")
    odd = data / "contexts" / "s00003.parquet"
    table = pq.read_table(odd)
    pq.write_table(table.set_column(1, "run_gamma", table.column(1).cast(pa.float64())), odd)
    with pytest.raises(UserInputError) as refused:
        tables.read_parquet_dir(data / "contexts")
    assert str(refused.value) == (
        f"{odd}: columns differ from s00000.parquet's: type of run_gamma (double, not int64)"
    )


def test_tables_and_weights_are_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    data = _dataset(tmp_path / "data", scenarios=5)
    before = (data / "labels.parquet").read_bytes()

    def cut_off(table: object, where: Any) -> None:
        where.write(b"PAR1 half a table")
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(pq, "write_table", cut_off)
        with pytest.raises(KeyboardInterrupt):
            tables.write_parquet({"scenario_id": [9], "label_gamma": [2]}, data / "labels.parquet")
    assert (data / "labels.parquet").read_bytes() == before
    assert sorted(p.name for p in data.iterdir()) == ["contexts", "labels.json", "labels.parquet"]
    import edgespec.output_paths as output_paths

    written: list[Path] = []
    whole = output_paths.write_text_atomically

    def spy(path: Path, text: str) -> None:
        written.append(path)
        whole(path, text)

    monkeypatch.setattr(output_paths, "write_text_atomically", spy)
    assert _train(data, tmp_path / "w.json") == 0
    assert written == [tmp_path / "w.json"]
    assert json.loads((tmp_path / "w.json").read_text())["kind"] == "wc-dnn"
