"""WISV's decision at a round's greedy mismatches: the one function both hosts call.

The real server's semantic rule (:class:`edgespec.runtime.server.semantic.SemanticRule`,
all of a round's mismatches at once) and the in-process WISV rollout
(:class:`edgespec.learn.wisv.rollout.HeadRule`, one mismatch at a time) ask
:func:`judge_mismatches`, so both build the head's inputs the same way (the two models'
hidden rows as float64, then the channel's CSI features in
:data:`~edgespec.policies.semantic.csi.CSI_FEATURE_NAMES` order) and both refuse an
answer outside the head's contract the same way
(:func:`~edgespec.policies.contracts.check_head_answer`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgespec.policies.contracts import check_head_answer
from edgespec.policies.interfaces import SemanticHead
from edgespec.policies.semantic.csi import ChannelState, csi_features


def judge_mismatches(
    head: SemanticHead,
    draft_hidden: npt.ArrayLike,
    target_hidden: npt.ArrayLike,
    channel: ChannelState,
    threshold: float,
) -> npt.NDArray[np.bool_]:
    """Which of n greedy mismatches ``head`` rejects at threshold T (0..16) on ``channel``:
    one bool per mismatch, ``True`` = rejected. ``draft_hidden`` and ``target_hidden``: the
    draft's and the target's hidden rows at the mismatches (n × each width; one 1-D row is
    n = 1), read as float64. The head gets ``inputs(h_d, h_t, csi_features(channel))``
    (its own shape checks: ``ValueError``), then ``rejects(x, threshold)``, whose answer
    must be a 1-D bool array of n entries, else a
    :class:`~edgespec.policies.contracts.PolicyContractError` naming the head."""
    hd = np.atleast_2d(np.asarray(draft_hidden, dtype=np.float64))
    ht = np.atleast_2d(np.asarray(target_hidden, dtype=np.float64))
    x = head.inputs(hd, ht, csi_features(channel))
    return check_head_answer(head, head.rejects(x, threshold), int(hd.shape[0]))
