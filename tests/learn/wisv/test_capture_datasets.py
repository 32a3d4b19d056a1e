"""WISV captures saved as a dataset and loaded back (edgespec.learn.wisv.dataset):
answer-labelled and similarity-labelled files round-trip with their rows, episodes and
summary, a file that is not wisv-data and a mix of both labels are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgespec.learn.wisv.capture import CaptureSettings, capture_prompt
from edgespec.learn.wisv.dataset import WisvDataset
from edgespec.learn.wisv.similarity import ContinuationSimilarity
from edgespec.runtime.backends.attention_mask import attention_layout
from tests.learn.wisv.capture_setup import NO_EOS, PROMPT, LastToken


def test_dataset_round_trip(pair: tuple[object, object], tmp_path: Path) -> None:
    target, draft = pair
    layout = attention_layout(target)
    captures = [
        capture_prompt(target, draft, layout, (i + 3, *PROMPT), i, CaptureSettings(4, 16),
                       LastToken(), NO_EOS)
        for i in (4, 9)
    ]  # fmt: skip
    data = WisvDataset.from_captures(captures, {"target": "tiny"})
    path = tmp_path / "d.npz"
    data.save(path)
    back = WisvDataset.load(path)
    assert len(back) == sum(len(c.mismatches) for c in captures) == len(data)
    assert back.draft_hidden.dtype == np.float16 and back.meta == {"target": "tiny"}
    np.testing.assert_array_equal(back.rows["critical"], data.rows["critical"])
    episodes = back.episodes()
    assert [p for p, _, _ in episodes] == [4, 9]
    assert episodes[1][2].positions == tuple(m.position for m in captures[1].mismatches)
    summary = back.summary()
    assert summary["prompts"] == 2 and summary["mismatches"] == len(data)
    assert summary["critical"] == sum(sum(c.critical) for c in captures)
    assert back.similarity is None and "answers_found" in summary
    with np.load(path) as raw:
        assert "similarity" not in raw.files  # answer-labelled files are as before
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros(2))
    with pytest.raises(ValueError, match="not a wisv-data file"):
        WisvDataset.load(bad)


def test_similarity_dataset_round_trip(pair: tuple[object, object], tmp_path: Path) -> None:
    target, draft = pair
    layout = attention_layout(target)
    criterion = ContinuationSimilarity(window=8)
    captures = [
        capture_prompt(target, draft, layout, (i + 3, *PROMPT), i, CaptureSettings(4, 20),
                       criterion, NO_EOS)
        for i in (2, 5)
    ]  # fmt: skip
    data = WisvDataset.from_captures(captures, {"dataset": "cnndm"})
    path = tmp_path / "s.npz"
    data.save(path)
    back = WisvDataset.load(path)
    scores = [s for c in captures for s in c.similarity or ()]
    assert back.similarity is not None and back.similarity.tolist() == pytest.approx(scores)
    np.testing.assert_array_equal(back.rows["critical"], (back.similarity < 0.5).astype(np.int8))
    assert set(back.continuation_answer.tolist()) <= {""}
    assert set(back.reference_answer.tolist()) == {""}
    summary = back.summary()
    assert "answers_found" not in summary
    assert summary["similarity_mean"] == pytest.approx(np.mean(scores), abs=1e-4)
    assert summary["similarity_median"] == pytest.approx(np.median(scores), abs=1e-4)
    histogram = summary["similarity_histogram"]
    assert len(histogram) == 10 and sum(histogram) == len(back)
    assert sum(histogram[:5]) == summary["critical"]  # bins below 0.5 are the critical ones
    answered = capture_prompt(
        target, draft, layout, PROMPT, 9, CaptureSettings(4, 16), LastToken(), NO_EOS
    )
    with pytest.raises(ValueError, match="mix"):
        WisvDataset.from_captures([captures[0], answered], {})
