"""Trimmed-vocabulary draft: id mapping, zero probability outside K, HF compatibility."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.models.loading import load_model
from edgespec.models.trimmed import TrimmedVocabDraft, build_id_maps
from tests.models.tiny import VOCAB, tiny_draft, tiny_target

KEPT = [7, 3, 11, 1, 20, 5]


def test_id_maps_send_kept_ids_to_their_index_and_others_to_the_other_slot() -> None:
    lookup, kept = build_id_maps(KEPT, VOCAB)
    assert kept.tolist() == KEPT
    assert [int(lookup[t]) for t in KEPT] == [0, 1, 2, 3, 4, 5]
    others = [t for t in range(VOCAB) if t not in KEPT]
    assert {int(lookup[t]) for t in others} == {len(KEPT)}


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([], "draft_token_ids is empty"),
        ([3, 48], "draft_token_ids must lie in 0..47"),
        ([3, 3], "draft_token_ids contains duplicates"),
    ],
)
def test_id_map_errors(ids: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_id_maps(ids, VOCAB)


def test_full_vocab_logits_are_the_trimmed_logits_scattered_with_zero_probability_elsewhere() -> (
    None
):
    draft = tiny_draft(KEPT)
    ids = torch.tensor([[2, 7, 30, 3, 44]])  # 30 and 44 are outside the kept vocabulary
    with torch.no_grad():
        full = draft(input_ids=ids).logits
        small, _ = draft.trimmed_forward(ids, use_cache=False)
    assert full.shape == (1, 5, VOCAB)
    assert torch.equal(full[..., KEPT], small)
    probs = torch.softmax(full, dim=-1)
    outside = [t for t in range(VOCAB) if t not in KEPT]
    assert torch.all(probs[..., outside] == 0.0)
    assert torch.allclose(probs.sum(-1), torch.ones(1, 5))
    argmax_full = full.argmax(-1)
    assert torch.equal(argmax_full, draft.to_target_ids(small.argmax(-1)))


def test_generate_only_emits_kept_tokens() -> None:
    draft = tiny_draft(KEPT)
    # transformers types GenerationMixin.generate's self as its GenerativePreTrainedModel
    # protocol (written for the `ty` checker), which mypy does not match to a model class
    out = draft.generate(  # type: ignore[misc]
        torch.tensor([[2, 9, 13]]), max_new_tokens=12, do_sample=False
    )
    assert set(out[0, 3:].tolist()) <= set(KEPT)


def test_save_and_load_round_trip_through_the_model_loader(tmp_path: Path) -> None:
    draft = tiny_draft(KEPT)
    draft.save(tmp_path / "d")
    assert (tmp_path / "d" / "trimmed_vocab.json").is_file()
    loaded = load_model(str(tmp_path / "d"))
    assert loaded.tokenizer is None
    ids = torch.tensor([[2, 7, 30, 3]])
    with torch.no_grad():
        before = draft(input_ids=ids).logits
        after = loaded.model(input_ids=ids).logits
    assert loaded.model.config.draft_token_ids == KEPT
    assert torch.allclose(before[..., KEPT], after[..., KEPT], atol=1e-2)
    assert torch.equal(before.argmax(-1), after.argmax(-1))


def test_transformers_assisted_generation_with_the_trimmed_draft_is_lossless() -> None:
    target = tiny_target()
    draft = tiny_draft(list(range(0, VOCAB, 2)))
    draft.generation_config.num_assistant_tokens = 4
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    ids = torch.tensor([[2, 17, 4, 9, 33]])
    with torch.no_grad():
        plain = target.generate(ids, max_new_tokens=16, do_sample=False)
        assisted = target.generate(ids, assistant_model=draft, max_new_tokens=16, do_sample=False)
    assert assisted.tolist() == plain.tolist()


def test_the_marker_is_json_whatever_the_target_is_called(tmp_path: Path) -> None:
    draft = tiny_draft(KEPT)
    draft.config.target_name = 'C:\\models\\"tiny"'
    draft.save(tmp_path / "d")
    marker = (tmp_path / "d" / "trimmed_vocab.json").read_text()
    assert json.loads(marker) == {"target": 'C:\\models\\"tiny"', "num_kept": 6}


def test_a_save_cut_off_before_the_marker_leaves_no_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draft = tiny_draft(KEPT)
    draft.save(tmp_path / "d")

    def cut_off(self: TrimmedVocabDraft, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("save cut off")

    monkeypatch.setattr(TrimmedVocabDraft, "save_pretrained", cut_off)
    with pytest.raises(RuntimeError, match="save cut off"):
        draft.save(tmp_path / "d")  # over the complete save: its marker goes first
    assert not (tmp_path / "d" / "trimmed_vocab.json").exists()
    with pytest.raises(RuntimeError, match="save cut off"):
        draft.save(tmp_path / "new")
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_a_disk_that_fills_as_the_marker_is_written_leaves_no_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.disk_full import disk_full_writing

    disk_full_writing(monkeypatch, "trimmed_vocab.json")
    with pytest.raises(OSError, match="No space left on device") as caught:
        tiny_draft(KEPT).save(tmp_path / "d")
    assert caught.value.filename == str(tmp_path / "d" / "trimmed_vocab.json")
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
    ]


def test_every_saved_file_is_as_readable_as_the_umask_allows(tmp_path: Path) -> None:
    """The weights were 0600 (safetensors writes them so whatever the umask) beside 0644
    config files: a draft trained by one user could not be served by another."""
    before = os.umask(0o022)
    try:
        tiny_draft(KEPT).save(tmp_path / "d")
    finally:
        os.umask(before)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "d").iterdir()}
    assert "model.safetensors" in modes and set(modes.values()) == {0o644}, modes
