"""AWC's stabiliser rules on hand-built sequences, the numpy WC-DNN, the window policy."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from edgespec.policies.awc import (
    MAX_NEAR_ONE_STEPS,
    AwcSettings,
    AwcState,
    AwcWindow,
    awc_features,
    clamp_prediction,
    ema,
    hysteresis,
    load_awc_window,
    round_gamma,
    stabilise,
)
from edgespec.policies.interfaces import (
    PairStateWindow,
    WindowDecision,
    WindowObservation,
    WindowPolicy,
)
from edgespec.policies.stop_drafting import DenseLayer
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES, WcDnn, wc_dnn_from_json
from tests.policies.awc_helpers import constant_model

S = AwcSettings()


def _run(raws: list[float], state: AwcState | None = None) -> list[WindowDecision]:
    state = state or AwcState()
    out = []
    for raw in raws:
        state, decision = stabilise(state, raw, S)
        out.append(decision)
    return out


def test_clamp_to_1_12() -> None:
    assert [clamp_prediction(x, S) for x in (-3.0, 0.4, 1.0, 7.3, 12.0, 15.0)] == [
        1.0, 1.0, 1.0, 7.3, 12.0, 12.0,
    ]  # fmt: skip


def test_ema_alpha_04_starts_at_the_first_prediction() -> None:
    assert ema(None, 10.0, 0.4) == 10.0
    assert ema(10.0, 5.0, 0.4) == pytest.approx(8.0)
    assert [d.gamma for d in _run([10.0, 5.0, 5.0, 5.0])] == [10, 8, 7, 6]  # 10, 8, 6.8, 6.08


def test_round_half_up_within_range() -> None:
    assert [round_gamma(x, S) for x in (1.0, 1.49, 1.5, 2.5, 11.6, 12.4)] == [1, 1, 2, 3, 12, 12]


def test_hysteresis_needs_two_consecutive_near_one_steps() -> None:
    assert hysteresis(False, 0, 1.4, S) == (False, 1)  # first near-1 step: stay distributed
    assert hysteresis(False, 1, 1.4, S) == (True, 2)  # second: switch to fused
    assert hysteresis(False, 1, 1.6, S) == (False, 0)  # a far step resets the count
    assert hysteresis(True, 2, 1.2, S) == (True, 3)
    assert hysteresis(True, 3, 1.5, S) == (False, 0)  # fused is left at once
    top = MAX_NEAR_ONE_STEPS  # the count saturates where a restored state is refused
    assert hysteresis(True, top, 1.2, S) == (True, top)


def test_sequence_into_fused_and_back() -> None:
    start = AwcState(smoothed=3.0)
    # s: 2.2, 1.72, 1.432 (near, 1), 1.2592 (near, 2 → fused), 5.5555 (leave fused)
    decisions = _run([1.0, 1.0, 1.0, 1.0, 12.0], start)
    assert decisions == [
        WindowDecision(2, False),
        WindowDecision(2, False),
        WindowDecision(1, False),  # near 1 once: γ = 1, still distributed
        WindowDecision(1, True),
        WindowDecision(6, False),
    ]


def test_an_interrupted_run_of_near_one_steps_does_not_switch() -> None:
    state = AwcState(smoothed=1.2)
    decisions = _run([1.0, 3.0, 1.0], state)  # s: 1.12 (near), 1.872, 1.5232
    assert [d.fused for d in decisions] == [False, False, False]


def _random_model(seed: int) -> WcDnn:
    rng = np.random.default_rng(seed)

    def dense(n_in: int, n_out: int) -> DenseLayer:
        return DenseLayer(rng.normal(size=(n_in, n_out)), rng.normal(size=n_out))

    return WcDnn(
        mean=rng.normal(size=5),
        scale=rng.uniform(0.5, 2.0, size=5),
        input=dense(5, 8),
        blocks=((dense(8, 8), dense(8, 8)), (dense(8, 8), dense(8, 8))),
        output=dense(8, 1),
    )


def test_numpy_forward_is_the_residual_silu_network() -> None:
    model = _random_model(1)
    x = np.array([[0.3, 0.7, 12.0, 40.0, 4.0]])

    def silu(v: np.ndarray) -> np.ndarray:
        out: np.ndarray = v / (1 + np.exp(-v))
        return out

    h = silu(((x - model.mean) / model.scale) @ model.input.weight + model.input.bias)
    for a, b in model.blocks:
        h = h + silu(h @ a.weight + a.bias) @ b.weight + b.bias
    expected = (silu(h) @ model.output.weight + model.output.bias)[:, 0]
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-12)
    # a missing feature is the training mean (standardised 0)
    with_nan = x.copy()
    with_nan[0, 3] = math.nan
    filled = x.copy()
    filled[0, 3] = model.mean[3]
    np.testing.assert_allclose(model.predict(with_nan), model.predict(filled), rtol=1e-12)


def test_json_round_trip(tmp_path: Path) -> None:
    model = _random_model(2)
    path = tmp_path / "w.json"
    path.write_text(json.dumps(model.to_json()))
    again = load_awc_window(str(path)).model
    x = np.random.default_rng(3).normal(size=(6, 5))
    np.testing.assert_array_equal(again.predict(x), model.predict(x))
    with pytest.raises(ValueError, match="not WC-DNN"):
        wc_dnn_from_json({"kind": "mlp"})


def test_features_from_an_observation() -> None:
    obs = WindowObservation(5, 0.75, 3, queue_depth=8, rtt_s=0.012, tpot_s=0.045)
    np.testing.assert_allclose(awc_features(obs, 32), [0.25, 0.75, 12.0, 45.0, 5.0])
    after_fused = WindowObservation(4, 0.75, 3, 8, 0.012, 0.045, previous_fused=True)
    assert awc_features(after_fused, 32)[4] == 1.0  # fused is encoded as γ = 1
    assert len(AWC_FEATURE_NAMES) == 5
    assert np.isnan(awc_features(WindowObservation(0, None), 32)[[1, 3]]).all()  # none yet


def test_window_policy_keeps_state_per_pair() -> None:
    policy = AwcWindow(constant_model(9.0), initial_gamma=4)
    assert isinstance(policy, WindowPolicy)
    first = WindowObservation(0, None)
    seen = WindowObservation(4, 0.5, 2, queue_depth=3, rtt_s=0.01, tpot_s=0.03)
    assert policy.next_window(first) == WindowDecision(4)  # no prediction before a verdict
    assert policy.next_window(seen) == WindowDecision(9)
    assert policy.next_window(first) == WindowDecision(9)  # a new session repeats the pair's
    low = AwcWindow(constant_model(-5.0), fused_gamma=3)
    seen_a, first_a = replace(seen, pair="a"), replace(first, pair="a")
    assert [low.next_window(seen_a) for _ in range(3)] == [
        WindowDecision(1, False),
        WindowDecision(3, True),  # fused rounds draft fused_gamma with the server's draft
        WindowDecision(3, True),
    ]
    assert low.next_window(first_a) == WindowDecision(3, True)  # a new session stays fused
    assert low.state("b") == AwcState() == low.state()  # other pairs are untouched
    assert low.next_window(replace(seen, pair="b")) == WindowDecision(1, False)
    assert low.next_window(first) == WindowDecision(4)  # pair "": still its initial γ


def test_pair_state_moves_a_pair_to_another_policy_object() -> None:
    """Two objects (device and server) hand a pair's state over and back: the decisions
    are those of one object seeing every round, which is what the simulator runs."""
    model = _random_model(4)
    rng = np.random.default_rng(5)
    observations = [
        WindowObservation(
            int(rng.integers(1, 12)), float(rng.uniform()), 2, int(rng.integers(0, 40)),
            float(rng.uniform(0, 0.05)), float(rng.uniform(0.01, 0.1)), pair="p",
        )
        for _ in range(12)
    ]  # fmt: skip
    one = AwcWindow(model)
    reference = [one.next_window(o) for o in observations]
    device, server = AwcWindow(model), AwcWindow(model)
    assert isinstance(device, PairStateWindow)
    assert device.pair_state("p") == ()  # nothing seen yet: the initial state
    decisions = []
    for i, obs in enumerate(observations):
        here, other = (device, server) if (i // 3) % 2 == 0 else (server, device)
        decisions.append(here.next_window(obs))
        if i % 3 == 2:  # hand over after every third round
            other.restore_pair_state("p", here.pair_state("p"))
    assert decisions == reference
    state = one.pair_state("p")
    assert len(state) == 3
    again = AwcWindow(model)
    again.restore_pair_state("q", state)
    assert again.state("q") == one.state("p")
    again.restore_pair_state("q", ())
    assert again.state("q") == AwcState()


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ((4.0, 0.0), "needs 3 numbers"),
        ((13.5, 0.0, 0.0), "smoothed must be in \\[1, 12\\]"),
        ((math.nan, 0.0, 0.0), "smoothed must be in"),
        ((4.0, 1.5, 0.0), "near_one_steps must be an integer in \\[0, 2147483647\\], got 1.5"),
        ((4.0, -1.0, 0.0), "near_one_steps must be an integer in"),
        (
            (4.0, 1e300, 1.0),
            "near_one_steps must be an integer in \\[0, 2147483647\\], got 1e\\+300",
        ),
        ((4.0, 0.0, 0.5), "fused must be 0 or 1, got 0.5"),
    ],
)
def test_a_malformed_pair_state_is_refused(state: tuple[float, ...], message: str) -> None:
    policy = AwcWindow(constant_model(3.0))
    with pytest.raises(ValueError, match=message):
        policy.restore_pair_state("p", state)
    assert policy.state("p") == AwcState()


def test_bundled_weights_load_and_decide_within_range() -> None:
    policy = load_awc_window()
    assert policy.model.metadata["settings"]["epochs"] == 100
    obs = WindowObservation(4, 0.8, 3, queue_depth=4, rtt_s=0.01, tpot_s=0.04)
    for _ in range(3):
        decision = policy.next_window(obs)
        assert 1 <= decision.gamma <= 12
