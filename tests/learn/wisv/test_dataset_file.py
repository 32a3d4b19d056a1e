"""A wisv-data file on disk (edgespec.learn.wisv.dataset, .dataset_checks): saved whole or
not at all; one that is cut off, empty, missing an array or with arrays whose lengths
disagree is refused at load, naming the file, the arrays and the problem."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.learn.wisv.dataset import WisvDataset
from tests.learn.wisv.test_train import synthetic


def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "d.npz"
    synthetic().save(path)
    return path


def _arrays(path: Path) -> dict[str, Any]:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _refused(path: Path) -> str:
    with pytest.raises(ValueError) as refused:
        WisvDataset.load(path)
    return str(refused.value)


def test_a_cut_off_or_empty_file_is_not_a_whole_npz(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:2000])
    assert _refused(path) == (
        f"{path}: not a wisv-data file (not an .npz archive: a cut-off or damaged zip archive: "
        "File is not a zip file)"
    )
    path.write_bytes(b"")
    assert _refused(path) == f"{path}: not a wisv-data file (not an .npz archive: empty file)"
    path.write_text('{"prompt": "x"}\n')
    assert _refused(path) == (
        f"{path}: not a wisv-data file (not an .npz archive: unrecognised contents)"
    )
    np.save(tmp_path / "one.npy", np.zeros(3))
    one = tmp_path / "one.npy"
    assert _refused(one) == f"{one}: not a wisv-data file (a single .npy array, not an .npz)"


def test_a_missing_array_is_named(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    arrays = _arrays(path)
    del arrays["continuation_answer"], arrays["round"]
    np.savez(path, **arrays)
    assert _refused(path) == f"{path}: not a wisv-data file (missing round, continuation_answer)"


def test_arrays_of_different_lengths_are_listed_by_length(tmp_path: Path) -> None:
    data = synthetic(prompts=4, per_prompt=3)
    path = tmp_path / "d.npz"
    dataclasses.replace(data, draft_hidden=data.draft_hidden[:10]).save(path)
    others = "position, round, offset, draft_id, target_id, critical, continuation_answer"
    assert _refused(path) == (
        f"{path}: the mismatch arrays need one entry per mismatch, but their lengths differ "
        f"(10 in draft_hidden; 12 in target_hidden, prompt_index, {others})"
    )
    rows = dict(data.rows) | {"critical": data.rows["critical"][:-2]}
    dataclasses.replace(data, rows=rows).save(path)
    assert "(10 in critical; 12 in draft_hidden, target_hidden, prompt_index," in _refused(path)
    prompts = dict(data.prompts) | {"agreement": np.ones(3)}
    dataclasses.replace(data, prompts=prompts).save(path)
    assert _refused(path) == (
        f"{path}: the prompt arrays need one entry per prompt, but their lengths differ "
        "(3 in agreement; 4 in prompts, prompt_tokens, output_tokens, num_rounds, "
        "reference_answer)"
    )


def test_ranks_kinds_flags_and_meta_are_checked(tmp_path: Path) -> None:
    data = synthetic(prompts=4, per_prompt=3)
    path = tmp_path / "d.npz"
    dataclasses.replace(data, draft_hidden=data.draft_hidden[:, 0]).save(path)
    assert _refused(path) == f"{path}: draft_hidden has shape (12,), expected 2 dimension(s)"
    rows = dict(data.rows) | {"position": data.rows["position"].astype(np.float64)}
    dataclasses.replace(data, rows=rows).save(path)
    assert _refused(path) == f"{path}: position holds float64, not integers"
    rows = dict(data.rows) | {"critical": np.full(12, 7, dtype=np.int8)}
    dataclasses.replace(data, rows=rows).save(path)
    assert _refused(path) == f"{path}: critical must hold 0 or 1, found 7"
    arrays = _arrays(_saved(tmp_path)) | {"meta": np.asarray("[1]")}
    np.savez(path, **arrays)
    assert _refused(path) == f"{path}: meta is a JSON list, not an object"
    arrays["similarity"] = np.array([object()] * 96, dtype=object)
    np.savez(path, **arrays)
    assert _refused(path) == f"{path}: array similarity cannot be read (pickled objects)"


def test_train_wisv_refuses_a_bad_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:2000])
    out = ["--out-dir", str(tmp_path / "o")]
    assert main(["train", "wisv", "--data", str(path), *out]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"edgespec train wisv: --data {path}: ") and err.count("\n") == 1
    assert err.endswith("not a wisv-data file (not an .npz archive: a cut-off or damaged zip "
                        "archive: File is not a zip file)\n")  # fmt: skip


def test_a_save_stopped_part_way_leaves_the_earlier_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(tmp_path)
    before = path.read_bytes()

    def cut_off(fh: Any, **arrays: Any) -> None:
        fh.write(before[: len(before) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", cut_off)
    with pytest.raises(KeyboardInterrupt):
        synthetic(prompts=3).save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["d.npz"]
    assert len(WisvDataset.load(path)) == len(synthetic())
