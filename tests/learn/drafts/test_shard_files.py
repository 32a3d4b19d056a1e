"""Distillation shards and feature files read back (edgespec.learn.drafts.samples,
.feature_train): one that is cut off, or whose lists or shapes disagree, is one line naming
the file (and the sequence), not a torch traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.errors import UserInputError
from edgespec.learn.drafts import feature_train as ft
from edgespec.learn.drafts.samples import load_shards, read_shard


def _shard(lengths: tuple[int, ...] = (3, 2, 0), k: int = 2) -> dict[str, list[torch.Tensor]]:
    return {
        "prompt_ids": [torch.tensor([2, 5], dtype=torch.int32) for _ in lengths],
        "output_ids": [torch.arange(n, dtype=torch.int32) + 3 for n in lengths],
        "topk_ids": [torch.zeros(n, k, dtype=torch.int32) for n in lengths],
        "topk_logits": [torch.zeros(n, k, dtype=torch.float16) for n in lengths],
    }


def _refused(*folders: Path) -> str:
    with pytest.raises(UserInputError) as refused:
        load_shards(*folders)
    return str(refused.value)


def test_whole_shards_load_with_the_empty_continuations_left_out(tmp_path: Path) -> None:
    torch.save(_shard(), tmp_path / "shard_00000.pt")
    samples = load_shards(tmp_path)
    assert [len(s.output_ids) for s in samples] == [3, 2]
    assert samples[0].topk_logits.dtype == torch.float32
    assert len(read_shard(tmp_path / "shard_00000.pt")) == 3


def test_a_cut_off_shard_is_named(tmp_path: Path) -> None:
    torch.save(_shard(), tmp_path / "shard_00000.pt")
    cut = tmp_path / "shard_00001.pt"
    torch.save(_shard(), cut)
    cut.write_bytes(cut.read_bytes()[:300])
    assert _refused(tmp_path) == (
        f"{cut}: not a readable distillation shard (PytorchStreamReader failed reading zip "
        "archive: failed finding central directory)"
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"output_ids": _shard()["output_ids"][:2]},
         ": the lists differ in length (prompt_ids 3, output_ids 2, topk_ids 3, "
         "topk_logits 3 sequences)"),
        ({"topk_logits": None}, ": topk_logits is a NoneType, not a list"),
        ({"topk_ids": _shard(k=3)["topk_ids"]},
         ": sequence 0: topk_ids (3, 3) and topk_logits (3, 2) must both be "
         "(output tokens = 3) × k"),
        ({"topk_ids": [torch.zeros(4, 2), *_shard()["topk_ids"][1:]],
          "topk_logits": [torch.zeros(4, 2), *_shard()["topk_logits"][1:]]},
         ": sequence 0: topk_ids (4, 2) and topk_logits (4, 2) must both be "
         "(output tokens = 3) × k"),
        ({"topk_logits": [torch.zeros(3, 2), torch.tensor([[0.0, 1.0], [2.0, float("nan")]]),
                          *_shard()["topk_logits"][2:]]},
         ": sequence 1: topk_logits row 1 holds NaN"),
        ({"prompt_ids": [torch.zeros(1, 2)] * 3},
         ": sequence 0: prompt_ids and output_ids must be 1-D, got (1, 2) and (3,)"),
        ({"output_ids": [[3, 4, 5], [3, 4], []]},
         ": sequence 0: output_ids is a list, not a tensor"),
    ],
)  # fmt: skip
def test_lists_and_shapes_that_disagree_are_named(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "shard_00000.pt"
    torch.save(_shard() | change, path)
    assert _refused(tmp_path) == f"{path}{problem}"


def test_a_shard_without_its_lists_is_named(tmp_path: Path) -> None:
    path = tmp_path / "shard_00000.pt"
    torch.save({"prompt_ids": []}, path)
    assert _refused(tmp_path) == (
        f"{path}: not a shard (missing output_ids, topk_ids, topk_logits)"
    )
    torch.save([1, 2], path)
    assert _refused(tmp_path) == f"{path}: not a shard (holds a list, not a dict)"


def test_featurizing_a_cut_off_shard_names_it_before_the_target_runs(tmp_path: Path) -> None:
    cut = tmp_path / "shards" / "shard_00000.pt"
    cut.parent.mkdir()
    torch.save(_shard(), cut)
    cut.write_bytes(cut.read_bytes()[:300])
    with pytest.raises(UserInputError, match=r"shard_00000\.pt: not a readable token shard"):
        ft.featurize_shards(None, [cut], tmp_path / "features")
    assert list((tmp_path / "features").iterdir()) == []
    text = {"prompt_ids": _shard()["prompt_ids"], "output_ids": _shard()["output_ids"][:1]}
    torch.save(text, cut)  # a text shard has no top-k lists
    with pytest.raises(UserInputError) as refused:
        ft.featurize_shards(None, [cut], tmp_path / "features")
    assert str(refused.value) == (
        f"{cut}: the lists differ in length (prompt_ids 3, output_ids 1 sequences)"
    )


def _features(lengths: tuple[int, ...] = (4, 1)) -> dict[str, list[Any]]:
    return {
        "ids": [torch.arange(n, dtype=torch.int32) for n in lengths],
        "prompt_len": [1 for _ in lengths],
        "features": [torch.zeros(n, 8, dtype=torch.float16) for n in lengths],
    }


def test_feature_files_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "features_shards_shard_00000.pt"
    torch.save(_features(), path)
    assert [len(s.ids) for s in ft.load_feature_files([path])] == [4]  # one token: left out
    for change, problem in (
        ({"features": [torch.zeros(3, 8), torch.zeros(1, 8)]},
         ": sequence 0: needs one feature row per id, got ids (4,), features (3, 8)"),
        ({"prompt_len": [5, 1]}, ": sequence 0: prompt_len 5 is not in 0..4"),
        ({"ids": _features()["ids"][:1]},
         ": the lists differ in length (ids 1, prompt_len 2, features 2 sequences)"),
    ):  # fmt: skip
        torch.save(_features() | change, path)
        with pytest.raises(UserInputError) as refused:
            ft.load_feature_files([path])
        assert str(refused.value) == f"{path}{problem}"
    path.write_bytes(b"")
    with pytest.raises(UserInputError, match=r"shard_00000\.pt: not a readable features file"):
        ft.load_feature_files([path])
