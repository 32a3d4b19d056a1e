"""The trained WISV head's export: the torch net as a numpy
:class:`~edgespec.policies.semantic.head.DecisionHead` with the standardisation folded in
front (:func:`export_head`), a check of the export (:func:`torch_probabilities`), the
model pair it is for (:func:`trained_pair`) and its JSON (:func:`head_json`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.policies.semantic.head import DecisionHead, TrainedFor

FloatArray = npt.NDArray[np.float64]


def export_head(
    net: Any, mean: FloatArray, scale: FloatArray, draft_hidden: int, target_hidden: int
) -> DecisionHead:
    """The numpy head of ``net`` with the standardisation folded in front."""

    def array(t: torch.Tensor) -> FloatArray:
        return np.asarray(t.detach().double().numpy(), dtype=np.float64).copy()

    return DecisionHead(
        draft_hidden=draft_hidden,
        target_hidden=target_hidden,
        mean=np.asarray(mean, dtype=np.float64),
        scale=np.asarray(scale, dtype=np.float64),
        w1=array(net.first.weight).T.copy(),
        b1=array(net.first.bias),
        w2=array(net.second.weight).T.copy(),
        b2=array(net.second.bias),
    )


def torch_probabilities(net: Any, head: DecisionHead, x: FloatArray) -> FloatArray:
    """The torch network's p (float64, eval mode) for raw inputs ``x``, to check an export."""
    z = torch.tensor((x - head.mean) / head.scale, dtype=torch.float64)
    was_training = net.training
    net.eval()
    with torch.no_grad():
        out = torch.sigmoid(net.double()(z)).numpy()
    net.float()
    net.train(was_training)
    return np.asarray(out, dtype=np.float64)


def _rounded(value: Any, digits: int) -> Any:
    if isinstance(value, list):
        return [_rounded(v, digits) for v in value]
    return float(f"{value:.{digits}g}")


def trained_pair(meta: dict[str, Any]) -> TrainedFor | None:
    """The pair a head trained on the dataset with ``meta`` is for: its captures' target
    and draft (:func:`~edgespec.models.registry.recorded_name`, a path from this folder;
    the draft ``None`` when they had several) and the target's vocabulary size they all
    record (``None`` otherwise); ``None`` when a capture records no target."""
    from edgespec.learn.wisv.shards import target_vocab_size
    from edgespec.models.registry import recorded_name

    captures = meta.get("union") or [meta]
    targets = {c.get("target") for c in captures}
    drafts = {c.get("draft") for c in captures}
    target = targets.pop() if len(targets) == 1 else None
    if not isinstance(target, str) or not target:
        return None
    draft = drafts.pop() if len(drafts) == 1 else None
    named = recorded_name(draft) if isinstance(draft, str) and draft else None
    return TrainedFor(recorded_name(target), named, target_vocab_size(captures))


def rounded_head(head: DecisionHead, digits: int | None) -> DecisionHead:
    """``head`` as :func:`head_json` writes it (``digits`` significant digits): the head
    the file holds, which ``train wisv`` measures and tabulates."""
    if digits is None:
        return head
    return replace(DecisionHead.from_json(head_json(head, digits, {})),
                   trained_for=head.trained_for)  # fmt: skip


def head_json(head: DecisionHead, digits: int | None, metadata: dict[str, Any]) -> dict[str, Any]:
    """:meth:`DecisionHead.to_json` (floats to ``digits`` significant digits unless None)
    plus a ``metadata`` entry (``from_json`` ignores it)."""
    data = head.to_json()
    if digits is not None:
        for key in ("mean", "scale", "w1", "b1", "w2", "b2"):
            data[key] = _rounded(data[key], digits)
    return {**data, "metadata": metadata}
