"""``edgespec train wisv --patience`` without ``--validation`` is refused before any
training (was: taken and ignored, training ran all ``--epochs``); with ``--validation``
it is the patience recorded, and without either the default 10."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from edgespec.cli import main
from tests.learn.wisv.test_train import synthetic


def _train(tmp_path: Path, *flags: str) -> int:
    data = tmp_path / "d.npz"
    if not data.exists():
        synthetic().save(data)
    out = ["--out-dir", str(tmp_path / "out"), "--epochs", "2", "--width", "8"]
    return main(["train", "wisv", "--data", str(data), *out, *flags])


def test_patience_without_validation_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _train(tmp_path, "--patience", "3") == 2
    assert capsys.readouterr().err == (
        "edgespec train wisv: --patience 3 stops training early on the --validation prompts: "
        "give --validation S too (without it training runs all --epochs)\n"
    )
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    ("flags", "patience"),
    [((), 10), (("--validation", "0.25"), 10), (("--validation", "0.25", "--patience", "3"), 3)],
)
def test_the_patience_recorded(tmp_path: Path, flags: tuple[str, ...], patience: int) -> None:
    assert _train(tmp_path, *flags) == 0
    metrics = json.loads((tmp_path / "out" / "tiny-metrics.json").read_text())
    assert metrics["settings"]["patience"] == patience
