"""``edgespec train wisv`` writes its three files in ``--out-dir`` and nowhere else: a
``--name`` with a '/' is a usage error (was: ``--name ../x`` wrote beside ``--out-dir``),
and with no ``--name`` a capture whose target is a model path names the files by its last
part (was: the whole path, so an absolute one put the head beside the model)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("torch")

from edgespec.cli import main
from tests.learn.wisv.test_train import synthetic

FLAGS = ("--epochs", "1", "--width", "8")


def test_a_model_path_target_names_the_files_in_out_dir(tmp_path: Path) -> None:
    model = tmp_path / "models" / "tiny-model"
    model.mkdir(parents=True)
    data = tmp_path / "d.npz"
    dataclasses.replace(synthetic(), meta={"target": str(model)}).save(data)
    out = tmp_path / "out"
    assert main(["train", "wisv", "--data", str(data), "--out-dir", str(out), *FLAGS]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "tiny-model-acceptance.json",
        "tiny-model-head.json",
        "tiny-model-metrics.json",
    ]
    assert sorted(p.name for p in model.parent.iterdir()) == ["tiny-model"]


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".."])
def test_a_name_that_is_a_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    data = tmp_path / "d.npz"
    synthetic().save(data)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "wisv", "--data", str(data), "--out-dir", str(out), "--name", name, *FLAGS])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"error: argument --name: {name!r} is not a file name stem: give a name without '/' "
        "(the files go in --out-dir)\n"
    )
    assert not any(p.suffix == ".json" for p in tmp_path.rglob("*"))


@pytest.mark.parametrize(
    ("target", "stem"),
    [
        ("gemma3-270m", "gemma3-270m"),
        ("/models/tiny-model", "tiny-model"),
        ("runs/my-target/", "my-target"),
        ("/models/x-Q4_K_M.gguf", "x-Q4_K_M"),
        ("/", "head"),
    ],
)
def test_the_default_name_of_each_kind_of_target(target: str, stem: str) -> None:
    from edgespec.learn.wisv.fit_flags import default_head_name

    assert default_head_name(target) == stem
