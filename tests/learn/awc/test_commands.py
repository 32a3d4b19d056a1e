"""`edgespec train awc-data --quick` on a local Ray, then `edgespec train awc` on what it
wrote: the CI path the DSD issue asks for, end to end through the CLI (the Ray part in a
process of its own, bounded in time: tests/ray_child.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("torch")

from edgespec.cli import main
from edgespec.policies.wc_dnn import load_wc_dnn
from tests.ray_child import run_ray_child


def test_quick_dataset_on_local_ray_then_training(tmp_path: Path) -> None:
    attempt, run = run_ray_child(
        lambda attempt: [
            *("-m", "edgespec.cli", "train", "awc-data", "--quick", "--workers", "2"),
            *("--out", str(tmp_path / f"awc-data-{attempt}")),
        ],
        timeout_s=120.0,  # twice stays inside the 300 s a test has (pyproject.toml)
    )
    assert run.returncode == 0, run.stderr[-4000:]
    data = tmp_path / f"awc-data-{attempt}"
    assert sorted(p.name for p in (data / "contexts").iterdir()) == [
        f"s{i:05d}.parquet" for i in range(4)
    ]
    weights = tmp_path / "wc-dnn.json"
    code = main(["train", "awc", "--data", str(data), "--out", str(weights), "--epochs", "3"])
    assert code == 0
    assert json.loads(weights.read_text())["kind"] == "wc-dnn"
    load_wc_dnn(str(weights))  # the numpy policy reads what training wrote


def test_missing_workload_trace_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.jsonl"
    args = ["train", "awc-data", "--quick", "--out", str(tmp_path / "d")]
    assert main([*args, "--workload-trace", str(missing)]) == 2
    assert f"--workload-trace {missing}: no such file" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()  # refused before anything ran


def test_train_awc_takes_the_shared_training_flags() -> None:
    from edgespec.arguments import TrainingOptions, training_options
    from edgespec.cli import build_parser

    args = build_parser().parse_args(["train", "awc", "--data", "d", "--out", "o", "--lr", "0.01"])
    assert training_options(args) == TrainingOptions(100, 0.01, 1e-2, 256, 0.2)


def test_train_awc_refuses_a_holdout_outside_zero_one(capsys: pytest.CaptureFixture[str]) -> None:
    from edgespec.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["train", "awc", "--data", "d", "--out", "o", "--holdout", "1"])
    assert stop.value.code == 2
    assert "argument --holdout: must be between 0 and 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("width", "message"),
    [
        ("1025", "must be <= 1024 (a wider WC-DNN's file is too large to load), got 1025"),
        ("2000", "must be <= 1024 (a wider WC-DNN's file is too large to load), got 2000"),
        ("0", "must be >= 1, got 0"),
    ],
)
def test_train_awc_refuses_a_width_outside_one_to_1024(
    capsys: pytest.CaptureFixture[str], width: str, message: str
) -> None:
    """Was unbounded: width ~1,800 wrote a WC-DNN file over the loader's 256 MiB."""
    from edgespec.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["train", "awc", "--data", "d", "--out", "o", "--width", width])
    assert stop.value.code == 2
    assert f"argument --width: {message}\n" in capsys.readouterr().err
    args = build_parser().parse_args(
        ["train", "awc", "--data", "d", "--out", "o", "--width", "1024"]
    )
    assert args.width == 1024
