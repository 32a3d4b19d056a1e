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
        f"edgespec train: {data / 'contexts'}: its Parquet files have no {missing}; "
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
        f"edgespec train: {data / 'labels.parquet'}: no {missing}; "
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
        f"edgespec train: {data / 'labels.json'}: not an awc-data labels file "
        f"(ValueError('{constant} is not a JSON number'))\n"
    )
    assert not out.exists()
