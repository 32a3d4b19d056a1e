"""The WISV decision head's forward pass (Eqs. 23–27) and the CSI features, by hand."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from edgespec.policies.semantic.csi import ChannelState, csi_features
from edgespec.policies.semantic.head import (
    DecisionHead,
    load_head,
    rejected_at,
    rejection_probability_threshold,
    rule_text,
)


def hand_head() -> DecisionHead:
    """d_h = 2, d_t = 1, 1 CSI feature; width 2. Standardisation: x' = (x − 1) / 2.
    Hidden: ReLU(x'₀ − x'₂), ReLU(x'₁ + x'₂ − 1); logit = 2·h₀ − h₁ + 0.5."""
    w1 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [-1.0, 1.0]])
    return DecisionHead(
        draft_hidden=2,
        target_hidden=1,
        mean=np.ones(4),
        scale=np.full(4, 2.0),
        w1=w1,
        b1=np.array([0.0, -1.0]),
        w2=np.array([[2.0], [-1.0]]),
        b2=np.array([0.5]),
    )


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def test_forward_by_hand() -> None:
    head = hand_head()
    x = head.inputs(np.array([[5.0, 3.0], [1.0, 9.0]]), np.array([[7.0], [0.0]]), (-1.0,))
    assert x.tolist() == [[5.0, 3.0, 7.0, -1.0], [1.0, 9.0, 0.0, -1.0]]
    # Row 0: x' = (2, 1, 3, −1): h = (ReLU(2 + 1), ReLU(1 − 1 − 1)) = (3, 0); logit 6.5.
    # Row 1: x' = (0, 4, −0.5, −1): h = (ReLU(0 + 1), ReLU(4 − 1 − 1)) = (1, 2); logit 0.5.
    p = head.rejection_probability(x)
    assert p.tolist() == pytest.approx([sigmoid(6.5), sigmoid(0.5)])
    # τ = 12/16 = 0.75: row 0 (p ≈ 0.998) is rejected, row 1 (p ≈ 0.62) accepted.
    assert head.rejects(x, 12).tolist() == [True, False]
    assert head.rejects(x, 0).tolist() == [True, True]  # standard greedy SD
    assert head.rejects(x, 16).tolist() == [False, False]  # accept everything


def constant_logit_head(logit: float) -> DecisionHead:
    """A head whose logit g is ``logit`` for every input (all weights 0, b2 = g)."""
    zeros = np.zeros(4)
    return DecisionHead(2, 1, zeros, np.ones(4), np.zeros((4, 1)), np.zeros(1),
                        np.zeros((1, 1)), np.array([logit]))  # fmt: skip


@pytest.mark.parametrize("logit", [-700.0, -37.0, 0.0, 36.0, 37.0, 40.0, 700.0])
def test_the_ends_are_exact_whatever_the_logit(logit: float) -> None:
    """T = 16 accepts every mismatch and T = 0 rejects every one, whatever g: σ(g) rounds
    to exactly 1.0 from g = 37 on, and p >= 16/16 rejected there at T = 16."""
    head = constant_logit_head(logit)
    x = head.inputs(np.zeros((3, 2)), np.zeros((3, 1)), (0.0,))
    assert head.rejects(x, 16).tolist() == [False, False, False]
    assert head.rejects(x, 0).tolist() == [True, True, True]
    p = head.rejection_probability(x)
    assert rejected_at(p, 16).tolist() == [False] * 3 and rejected_at(p, 0).tolist() == [True] * 3
    assert head.rejects(x, 15).tolist() == [logit >= 2.8] * 3  # σ(2.8) ≈ 0.943 ≥ 15/16


def test_a_logit_far_below_zero_is_p_0_without_an_overflow_warning() -> None:
    """exp(−g) overflows from g ≈ −710 on: σ is then exactly 0, and no RuntimeWarning is
    raised (a warning is an error under ``-W error``)."""
    head = constant_logit_head(-1000.0)
    x = head.inputs(np.zeros((2, 2)), np.zeros((2, 1)), (0.0,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert head.rejection_probability(x).tolist() == [0.0, 0.0]
        assert head.rejects(x, 1).tolist() == [False, False]


def test_the_rule_in_words_says_the_ends() -> None:
    """The server's session line said "rejected when p >= 1" at T = 16, which accepts
    every mismatch."""
    assert rule_text(0) == "every mismatch is rejected"
    assert rule_text(16) == "every mismatch is accepted"
    assert rule_text(12) == "a mismatch is rejected when p >= 0.75"


def test_a_rejection_probability_that_is_no_number_is_an_error_not_an_acceptance() -> None:
    head = hand_head()
    x = head.inputs(np.array([[5.0, 3.0], [1.0, 9.0]]), np.array([[7.0], [0.0]]), (np.nan,))
    assert np.isnan(head.rejection_probability(x)).all()
    with pytest.raises(ValueError, match=r"rejection probability is not a number at rows \[0, 1\]"):
        head.rejects(x, 0)  # NaN >= 0 is false: every mismatch would have been accepted


def test_json_round_trip(tmp_path: Path) -> None:
    head = hand_head()
    path = tmp_path / "head.json"
    path.write_text(json.dumps(head.to_json()))
    again = load_head(path)
    x = head.inputs(np.array([[5.0, 3.0]]), np.array([[7.0]]), (0.25,))
    assert again.rejection_probability(x).tolist() == head.rejection_probability(x).tolist()


def test_shapes_and_thresholds_are_checked() -> None:
    head = hand_head()
    with pytest.raises(ValueError, match="takes 2 \\(draft\\) and 1 \\(target\\)"):
        head.inputs(np.zeros((1, 3)), np.zeros((1, 1)), (0.0,))
    with pytest.raises(ValueError, match="1 CSI features \\(the head takes 1\\)|2 CSI"):
        head.inputs(np.zeros((1, 2)), np.zeros((1, 1)), (0.0, 1.0))
    with pytest.raises(ValueError, match="threshold must be in \\[0, 16\\]"):
        rejection_probability_threshold(17)
    with pytest.raises(ValueError, match="leaves no CSI features"):
        DecisionHead(
            2, 2, np.ones(4), np.ones(4), np.ones((4, 2)), np.ones(2), np.ones((2, 1)), np.ones(1)
        )


def test_csi_features_and_channel_quality() -> None:
    poor = ChannelState(uplink_bps=20e6, per=0.0, rtt_s=0.05)
    good = ChannelState(uplink_bps=500e6, per=0.1, rtt_s=0.005)
    assert poor.quality == pytest.approx(math.log10(20) / 3)  # ≈ 0.434
    assert good.quality == pytest.approx(math.log10(500) / 3 * 0.9)
    assert csi_features(poor) == pytest.approx((math.log10(20), 0.0, 0.5, math.log10(20) / 3))
    assert ChannelState(uplink_bps=5e5).quality == 0.0  # below 1 Mbit/s
    assert ChannelState(uplink_bps=5e9).quality == 1.0
    with pytest.raises(ValueError, match="PER must be in"):
        ChannelState(uplink_bps=1e6, per=1.0)
    with pytest.raises(ValueError, match="uplink rate must be"):
        ChannelState(uplink_bps=0.0)
    with pytest.raises(ValueError, match=r"uplink rate must be a finite number >= 1 bit/s"):
        ChannelState(uplink_bps=5e-324)  # rate / 1 Mbit/s underflows to 0: no log10
    with pytest.raises(ValueError, match=r"RTT must be in \[0, 1e\+06\] s, got 1e\+308"):
        ChannelState(uplink_bps=1e6, rtt_s=1e308)  # RTT / 100 ms is inf: the head's p NaN
    assert csi_features(ChannelState(uplink_bps=1.0, rtt_s=1e6)) == (-6.0, 0.0, 1e7, 0.0)


def test_a_head_file_is_read_bounded_and_as_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read through edgespec.config's read_text: at most MAX_TEXT_BYTES (here lowered to
    10 bytes), found reading one byte past it, not read whole (was unbounded); text that
    is not UTF-8 names the byte; a folder is named as one."""
    import edgespec.config.files

    path = tmp_path / "head.json"
    path.write_text(json.dumps(hand_head().to_json()))
    monkeypatch.setattr(edgespec.config.files, "MAX_TEXT_BYTES", 10)
    with pytest.raises(ValueError) as info:
        load_head(path)
    assert str(info.value) == (
        f"cannot read {path}: larger than 10 bytes, the limit for a decision head file"
    )
    monkeypatch.undo()
    path.write_bytes(b'{"draft_hidden": \xff}')
    with pytest.raises(ValueError) as info:
        load_head(path)
    assert str(info.value) == f"cannot read {path}: not UTF-8 text (byte 0xff at offset 17)"
    with pytest.raises(ValueError) as info:
        load_head(tmp_path)
    assert str(info.value) == f"cannot read {tmp_path}: is a directory, not a decision head file"
