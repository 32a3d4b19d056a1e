"""The bundled real-pair traces and draft are present and well formed."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from edgespec.learn.trace import read_trace, replay_accepted_lengths
from edgespec.models.registry import ModelSource, resolve_model

TRACES = Path(str(resources.files("edgespec") / "data" / "traces"))


def test_bundled_traces_cover_every_dataset_with_real_acceptance_data() -> None:
    for dataset in ("gsm8k", "cnndm", "humaneval", "sharegpt"):
        records = read_trace(TRACES / f"{dataset}.jsonl")
        assert len(records) == 6
        for r in records:
            assert r.dataset == dataset and r.target_model == "gemma3-270m"
            assert r.draft_model == "gemma3-270m-draft+lookup" and r.gamma_max == 4
            assert r.draft_features is not None and len(r.draft_features[0]) == 5
            measured = [x.num_accepted for x in r.rounds]
            assert replay_accepted_lengths(r.acceptance_seq, 4, 64) == measured


def test_bundled_draft_resolves() -> None:
    spec = resolve_model("gemma3-270m-draft")
    assert spec.source is ModelSource.BUNDLED_DRAFT
    assert spec.path is not None and (spec.path / "model.safetensors").stat().st_size < 10_000_000
