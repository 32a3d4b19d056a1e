"""Feature draft: unrolled training-time steps equal incremental drafting; save/load; config."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from edgespec.models.feature_draft import (
    FeatureDraftConfig,
    FeatureDraftNet,
    load_feature_draft,
    save_feature_draft,
    target_rows,
)
from edgespec.models.registry import FEATURE_DRAFT_MARKER
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.backends.feature_draft import FeatureDraft
from tests.models.tiny import VOCAB, tiny_target

KEPT = tuple(range(3, 40))


def _net(seed: int = 0) -> FeatureDraftNet:
    torch.manual_seed(seed)
    target = tiny_target()
    config = FeatureDraftConfig(
        target_name="tiny",
        target_vocab_size=VOCAB,
        hidden_size=32,
        draft_token_ids=KEPT,
        num_heads=2,
        head_dim=8,
        intermediate_size=24,
    )
    net = FeatureDraftNet(config, *target_rows(target, KEPT))
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return net.eval()


def _sequence(length: int, seed: int) -> tuple[list[int], torch.Tensor]:
    rng = np.random.default_rng(seed)
    ids = [int(t) for t in rng.integers(3, VOCAB, size=length)]
    return ids, torch.randn(length, 32, generator=torch.Generator().manual_seed(seed))


def test_incremental_drafting_equals_unrolled_steps() -> None:
    net = _net()
    ids, feats = _sequence(14, seed=1)
    n = 8  # committed x_0..x_8, features f_0..f_7 known
    drafter = FeatureDraft(net)
    drafter.observe_target_hidden(0, feats[:n].numpy())
    proposal = drafter.propose(ids[: n + 1], 4, 0.0, np.random.default_rng(0))
    # unrolled with the drafted tokens in place of the true ones
    seq = list(ids)
    seq[n + 1 : n + 4] = proposal.token_ids[:3]
    with torch.no_grad():
        steps = net.unrolled(feats[None], net.target_to_draft[torch.tensor(seq)][None], 4)
    expected = [int(net.draft_to_target[net.head_logits(s[0, n - 1]).argmax()]) for s in steps]
    assert list(proposal.token_ids) == expected
    assert drafter.last_logits is not None and drafter.last_logits.shape == (4, len(KEPT))
    assert drafter.num_entries == n  # temporary entries were not kept


def test_cache_reuse_gives_the_same_proposal_as_a_fresh_drafter() -> None:
    net = _net()
    ids, feats = _sequence(20, seed=2)
    warm = FeatureDraft(net)
    warm.observe_target_hidden(0, feats[:6].numpy())
    warm.propose(ids[:7], 3, 0.0, np.random.default_rng(0))
    warm.observe_target_hidden(6, feats[6:11].numpy())  # contiguous, as the engine sends
    got = warm.propose(ids[:12], 3, 0.0, np.random.default_rng(0))
    cold = FeatureDraft(net)
    cold.observe_target_hidden(0, feats[:11].numpy())
    assert got.token_ids == cold.propose(ids[:12], 3, 0.0, np.random.default_rng(0)).token_ids
    # a different continuation after a shared prefix re-uses only the shared entries
    other = list(ids[:12])
    other[9] = (other[9] + 1 - 3) % (VOCAB - 3) + 3
    fresh = FeatureDraft(net)
    fresh.observe_target_hidden(0, feats[:11].numpy())
    want = fresh.propose(other, 3, 0.0, np.random.default_rng(0)).token_ids
    assert warm.propose(other, 3, 0.0, np.random.default_rng(0)).token_ids == want


def test_without_features_it_falls_back_to_lookup_then_repeat() -> None:
    drafter = FeatureDraft(_net())
    rng = np.random.default_rng(0)
    assert drafter.propose([5, 6, 7, 5, 6], 3, 0.0, rng).token_ids == (7, 5, 6)
    assert drafter.propose([9, 10, 11], 3, 0.0, rng).token_ids == (11,)
    sampled = drafter.propose([9, 10, 11], 3, 1.0, rng)
    assert sampled.probs is not None and sampled.probs[0, 11] == 1.0


def test_sampling_gives_a_distribution_over_kept_tokens_only() -> None:
    drafter = FeatureDraft(_net())
    ids, feats = _sequence(6, seed=3)
    drafter.observe_target_hidden(0, feats[:5].numpy())
    proposal = drafter.propose(ids, 2, 0.8, np.random.default_rng(4))
    assert proposal.probs is not None and proposal.probs.shape == (2, VOCAB)
    np.testing.assert_allclose(proposal.probs.sum(axis=1), 1.0, rtol=1e-5)
    outside = [t for t in range(VOCAB) if t not in KEPT]
    assert float(proposal.probs[:, outside].sum()) == 0.0


def test_with_lookup_a_sampled_block_proposes_looked_up_tokens_for_certain() -> None:
    """Sampling with ``lookup``, a looked-up token is drafted as greedily: its q is a point
    mass (stochastic verification then accepts it with the target's probability)."""
    ids, feats = _sequence(12, seed=3)
    ids[10:12] = ids[3:5]  # the last 2-gram occurred at 3..4: lookup proposes ids[5], ids[6]
    blocks = []
    for temperature in (0.0, 0.8):
        drafter = FeatureDraft(_net(), lookup=True)
        drafter.observe_target_hidden(0, feats[:11].numpy())
        blocks.append(drafter.propose(ids, 2, temperature, np.random.default_rng(4)))
    greedy, sampled = blocks
    assert sampled.token_ids == greedy.token_ids == (ids[5], ids[6])
    assert greedy.probs is None and sampled.probs is not None
    np.testing.assert_array_equal(sampled.probs, np.eye(VOCAB, dtype=np.float32)[[ids[5], ids[6]]])


def test_observe_rejects_gaps_and_wrong_width() -> None:
    drafter = FeatureDraft(_net())
    with pytest.raises(ValueError, match="start at 3, but only 0 known"):
        drafter.observe_target_hidden(3, np.zeros((2, 32), np.float32))
    with pytest.raises(ValueError, match=r"must be \(n, 32\)"):
        drafter.observe_target_hidden(0, np.zeros((2, 31), np.float32))


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    net = _net()
    save_feature_draft(net, tmp_path / "d")
    loaded = load_feature_draft(tmp_path / "d", tiny_target())
    ids, feats = _sequence(10, seed=5)
    draft_ids = net.target_to_draft[torch.tensor(ids)][None]
    with torch.no_grad():
        want = net.unrolled(feats[None], draft_ids, 2)
        got = loaded.unrolled(feats[None], draft_ids, 2)
    for a, b in zip(want, got, strict=True):
        torch.testing.assert_close(a, b, atol=5e-3, rtol=5e-3)  # fp16 on disk


def test_config_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="draft_token_ids must lie in 0..47"):
        FeatureDraftConfig("t", VOCAB, 32, (1, 48))
    path = tmp_path / FEATURE_DRAFT_MARKER
    path.write_text('{"target_name": "t", "bogus": 1}')
    with pytest.raises(ValueError, match="unknown field"):
        FeatureDraftConfig.from_file(path)
    save_feature_draft(_net(), tmp_path / "d")
    wrong = tiny_target()
    wrong.resize_token_embeddings(VOCAB + 2)
    with pytest.raises(ValueError, match="vocabulary 48 and hidden size 32"):
        load_feature_draft(tmp_path / "d", wrong)


def test_a_saved_feature_draft_resolves_and_loads_with_its_target(tmp_path: Path) -> None:
    from edgespec.models.loading import LoadedModel, load_model
    from edgespec.models.registry import ModelSource, resolve_model

    save_feature_draft(_net(), tmp_path / "fd")
    spec = resolve_model(str(tmp_path / "fd"))
    assert spec.source is ModelSource.FEATURE_DRAFT
    target = LoadedModel(
        spec=resolve_model(str(tmp_path / "fd")), model=tiny_target(), tokenizer=None
    )
    loaded = load_model(spec, target=target)
    assert isinstance(loaded.model, FeatureDraftNet)
    assert loaded.model.config.draft_token_ids == KEPT


def test_the_config_marker_goes_first_and_comes_back_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import safetensors.torch

    save_feature_draft(_net(), tmp_path / "d")
    marker = tmp_path / "d" / FEATURE_DRAFT_MARKER

    def cut_off(*args: object, **kwargs: object) -> None:
        raise RuntimeError("save cut off")

    monkeypatch.setattr(safetensors.torch, "save_file", cut_off)
    with pytest.raises(RuntimeError, match="save cut off"):
        save_feature_draft(_net(), tmp_path / "new")
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == []
    with pytest.raises(RuntimeError, match="save cut off"):
        save_feature_draft(_net(), tmp_path / "d")  # over a complete save
    assert not marker.exists()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_a_disk_that_fills_as_the_marker_is_written_leaves_no_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.disk_full import disk_full_writing

    disk_full_writing(monkeypatch, FEATURE_DRAFT_MARKER)
    with pytest.raises(OSError, match="No space left on device") as caught:
        save_feature_draft(_net(), tmp_path / "d")
    assert caught.value.filename == str(tmp_path / "d" / FEATURE_DRAFT_MARKER)
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["model.safetensors"]


def test_a_requests_shaping_is_made_on_the_heads_kept_columns() -> None:
    """A bias on kept token 20 wins every step, one on token 1 (not kept) is left out; a
    top-1 cut makes the sampled q one-hot at the head's argmax."""
    net = _net()
    ids, feats = _sequence(10, seed=5)
    drafter = FeatureDraft(net)
    drafter.observe_target_hidden(0, feats[:9].numpy())
    rng = np.random.default_rng(0)
    plain = drafter.propose(ids, 3, 0.0, rng).token_ids
    biased = DraftShaping(len(ids), logit_bias=((1, 100.0), (20, 100.0)))
    assert drafter.propose(ids, 3, 0.0, rng, biased).token_ids == (20, 20, 20) != plain
    sampled = drafter.propose(ids, 1, 1.0, rng, DraftShaping(len(ids), top_k=1))
    assert sampled.token_ids == plain[:1]
    assert sampled.probs is not None and sampled.probs[0, plain[0]] == 1.0


def test_the_saved_weights_are_as_readable_as_the_umask_allows(tmp_path: Path) -> None:
    before = os.umask(0o027)
    try:
        save_feature_draft(_net(), tmp_path / "d")
    finally:
        os.umask(before)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "d").iterdir()}
    assert modes == {"model.safetensors": 0o640, FEATURE_DRAFT_MARKER: 0o640}
