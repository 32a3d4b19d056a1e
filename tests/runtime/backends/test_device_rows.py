"""Logit rows left on the device: a greedy verdict takes their argmax and never copies
the rows to the host; a sampled verdict copies them once."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import torch

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.device_rows import DeviceRows, device_rows
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode


def test_each_item_gets_its_last_rows_and_their_argmax() -> None:
    logits = torch.randn(3, 4, 50, generator=torch.Generator().manual_seed(0))
    logits[1, 3, 7] = logits[1, 3, 9] = 100.0  # a tie: the first index wins, as np.argmax
    rows = device_rows(logits, [4, 2, 1])
    assert [r.num_rows for r in rows] == [4, 2, 1]
    for item, (r, n) in enumerate(zip(rows, [4, 2, 1], strict=True)):
        want = logits[item, 4 - n :].numpy()
        np.testing.assert_array_equal(r.host(), want)
        assert r.argmax() == tuple(int(t) for t in np.argmax(want, axis=-1))
    assert rows[1].argmax()[-1] == 7


def test_bfloat16_rows_argmax_as_their_float32_copy() -> None:
    logits = torch.randn(2, 3, 262_144, generator=torch.Generator().manual_seed(1))
    rows = device_rows(logits.to(torch.bfloat16), [3, 3])
    for r in rows:
        host = r.host()
        assert host.dtype == np.float32
        assert r.argmax() == tuple(int(t) for t in np.argmax(host, axis=-1))


def test_own_rows_keep_their_values_when_the_batch_changes() -> None:
    logits = torch.zeros(2, 2, 5)
    logits[0, :, 3] = 1.0
    kept = device_rows(logits, [2, 1])[0].own()
    logits.fill_(-1.0)  # the batch's buffer reused
    np.testing.assert_array_equal(kept.host()[:, 3], [1.0, 1.0])
    assert kept.argmax() == (3, 3)


def test_rows_and_argmax_must_agree_in_count() -> None:
    with pytest.raises(ValueError, match=r"1 argmax ids for rows of shape \(2, 5\)"):
        DeviceRows(torch.zeros(2, 5), (0,))
    with pytest.raises(ValueError, match=r"must be 2-D \(rows × vocabulary\), got \(5,\)"):
        HostRows(np.zeros(5, dtype=np.float32))


def test_host_rows_own_copies_a_view_only() -> None:
    batch = np.zeros((3, 4), dtype=np.float32)
    view = HostRows(batch[1:])
    assert view.own().rows.base is None
    whole = HostRows(batch)
    assert whole.own() is whole


def _counting_host(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = DeviceRows.host

    this = threading.current_thread()  # not another test's server left in this worker

    def host(self: DeviceRows) -> npt.NDArray[np.float32]:
        if threading.current_thread() is this:
            calls.append(self.num_rows)
        return original(self)

    monkeypatch.setattr(DeviceRows, "host", host)
    return calls


def test_greedy_verification_copies_no_rows_to_the_host(
    target: TransformersTarget, draft_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = (1, 2, 3, 4, 5)
    reference = target_greedy_decode(target, prompt, 24)
    calls = _counting_host(monkeypatch)
    greedy = SamplingParams(max_new_tokens=24)
    result = speculative_generate(target, TransformersDraft(draft_model), prompt, 4, greedy)
    assert result.output_token_ids == reference
    assert calls == []
    sampled = SamplingParams(max_new_tokens=8, temperature=1.0)
    speculative_generate(target, TransformersDraft(draft_model), prompt, 4, sampled)
    assert calls and all(n >= 1 for n in calls)  # a sampled verdict needs the rows


def test_a_greedy_draft_copies_its_rows_only_when_they_are_read(
    draft_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies: list[tuple[int, ...]] = []
    original = torch.Tensor.cpu

    this = threading.current_thread()  # not another test's server left in this worker

    def cpu(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if threading.current_thread() is this:
            copies.append(tuple(self.shape))
        return original(self, *args, **kwargs)

    drafter = TransformersDraft(draft_model)
    monkeypatch.setattr(torch.Tensor, "cpu", cpu)
    proposal = drafter.propose([1, 2, 3, 4, 5], 4, 0.0, np.random.default_rng(0))
    assert copies == []  # each greedy token is its row's argmax, taken on the device
    rows = drafter.last_logits
    vocab = int(draft_model.config.vocab_size)
    assert copies == [(4, vocab)] and rows is not None and rows.shape == (4, vocab)
    assert proposal.token_ids == tuple(int(t) for t in np.argmax(rows, axis=-1))
    assert drafter.last_logits is rows  # copied once
