"""`edgespec train awc` never writes a NaN model: an infinite feature is refused at load
naming its file, column and row; a training that diverges (a huge --lr) is an error and
writes nothing; --lr and --weight-decay refuse inf and nan."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("pyarrow")

from edgespec.cli import main
from edgespec.learn.awc.tables import write_parquet
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES, load_wc_dnn


def _dataset(root: Path, change: Any = None) -> Path:
    """Five scenarios of eight contexts each, labels 1..4; ``change(scenario, columns)``
    edits a scenario's columns before they are written."""
    rng = np.random.default_rng(0)
    for scenario in range(5):
        columns: dict[str, list[Any]] = {"scenario_id": [scenario] * 8, "run_gamma": [4] * 8}
        for name in AWC_FEATURE_NAMES:
            columns[name] = rng.random(8).tolist()
        if change is not None:
            change(scenario, columns)
        write_parquet(columns, root / "contexts" / f"s{scenario:05d}.parquet")
    labels = {"scenario_id": list(range(5)), "label_gamma": [1 + s % 4 for s in range(5)]}
    write_parquet(labels, root / "labels.parquet")
    (root / "labels.json").write_text(json.dumps({"weights": {"ttft": 0.5, "tpot": 0.5}}))
    return root


def _train(data: Path, out: Path, *extra: str) -> int:
    return main(["train", "awc", "--data", str(data), "--out", str(out), "--epochs", "2", *extra])


def test_a_finite_dataset_trains_and_writes_a_loadable_model(tmp_path: Path) -> None:
    out = tmp_path / "wc-dnn.json"
    assert _train(_dataset(tmp_path / "d"), out, "--width", "8") == 0
    load_wc_dnn(str(out))


def test_an_infinite_feature_is_refused_naming_file_column_and_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def infinite(scenario: int, columns: dict[str, list[Any]]) -> None:
        if scenario == 2:
            columns["rtt_ms"][5] = float("inf")

    data, out = _dataset(tmp_path / "d", infinite), tmp_path / "wc-dnn.json"
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'contexts' / 's00002.parquet'}: column 'rtt_ms', row 5 "
        "(from 0) is inf; features must be finite numbers (NaN for a missing one)\n"
    )
    assert not out.exists()


def test_a_feature_with_no_value_at_all_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(scenario: int, columns: dict[str, list[Any]]) -> None:
        columns["tpot_ms"] = [float("nan")] * 8

    data, out = _dataset(tmp_path / "d", missing), tmp_path / "wc-dnn.json"
    assert _train(data, out) == 2
    assert capsys.readouterr().err == (
        "edgespec train awc: "
        f"{data / 'contexts'}: column 'tpot_ms' has no value (every row is NaN)\n"
    )
    assert not out.exists()


def test_some_missing_features_are_still_imputed(tmp_path: Path) -> None:
    def early(scenario: int, columns: dict[str, list[Any]]) -> None:
        columns["tpot_ms"][0] = float("nan")  # TPOT before two tokens: a missing value

    out = tmp_path / "wc-dnn.json"
    assert _train(_dataset(tmp_path / "d", early), out, "--width", "8") == 0
    assert np.isfinite(load_wc_dnn(str(out)).mean).all()


def test_a_diverged_training_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "wc-dnn.json"
    assert _train(_dataset(tmp_path / "d"), out, "--lr", "1e30") == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("epoch 1/2: loss ") and err[1] == "epoch 2/2: loss nan"  # said
    assert re.fullmatch(
        r"edgespec train awc: training diverged: (input|output|blocks\[\d\]\[\d\])\."
        r"(weight|bias)\[[\d, ]+\] is nan, not a finite number; nothing written "
        r"\(try a lower --lr\)",
        err[-1],
    ), err
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value"), [("--lr", "inf"), ("--lr", "nan"), ("--weight-decay", "inf")]
)
def test_non_finite_training_rates_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    out = tmp_path / "wc-dnn.json"
    with pytest.raises(SystemExit) as stop:
        _train(tmp_path / "d", out, flag, value)
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"error: argument {flag}: must be a finite number, got '{value}'\n"
    )
    assert not out.exists()


def test_a_missing_labels_json_is_an_error_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "d")
    (data / "labels.json").unlink()
    assert _train(data, tmp_path / "wc-dnn.json") == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: {data / 'labels.json'}: cannot read (No such file or directory)\n"
    )


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} in strict JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_split_without_fused_labels_reports_null_recall_in_strict_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``"fused_recall":NaN`` in the model file and the printed report."""
    data, out = _dataset(tmp_path / "d"), tmp_path / "wc-dnn.json"
    write_parquet({"scenario_id": list(range(5)), "label_gamma": [2, 3, 4, 2, 3]},
                  data / "labels.parquet")  # fmt: skip
    assert _train(data, out, "--width", "8") == 0
    report = _strict(out.read_text())["metadata"]["report"]
    assert report["train"]["fused_recall"] is None
    assert report["held_out"]["fused_recall"] is None
    assert report["held_out"]["fused_share"] == 0.0
    assert _strict(capsys.readouterr().out) == report
    assert load_wc_dnn(str(out)).metadata["report"] == report
