"""What the window parity test records of each host's window policy: every observation it
was shown and every decision it made (:class:`Recorded`), how two hosts' observations are
compared (:func:`assert_same_observations`, :func:`assert_rtt_is_the_rounds_network`),
and hand-built AWC weights: :func:`load_sensitive_wc_dnn` reads every observation field the
shipped AWC reads, :func:`acceptance_only_wc_dnn` the recent acceptance alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import RoundRecord
from edgespec.policies.interfaces import PairStateWindow, WindowDecision, WindowObservation
from edgespec.policies.stop_drafting import DenseLayer
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES, WcDnn

LOAD_WEIGHTS = {"queue_utilisation": 100.0, "rtt_ms": 0.2, "tpot_ms": 0.02}
"""The load unit's weights: it fires (γ → 1, then fused) past a queue utilisation of 0.6,
an RTT of 300 ms or a TPOT of 3 s, alone; a loopback round (RTT ≈ 1 ms, TPOT a few ms) and
the simulated link (10 ms, TPOT < 0.1 s) leave it at silu(-56) ≈ 0."""
LOAD_BIAS = -60.0


def acceptance_only_wc_dnn() -> WcDnn:
    """raw γ = 2·silu(silu(6·acceptance − 2)): ≈ −0.2 at 0, 1.0 at 0.5, 7.7 at 1 (one
    unit, blind to the load: :mod:`tests.sim.test_window_pairs` runs it on a fleet)."""
    zero = DenseLayer(np.zeros((1, 1)), np.zeros(1))
    weight = np.zeros((len(AWC_FEATURE_NAMES), 1))
    weight[AWC_FEATURE_NAMES.index("recent_acceptance"), 0] = 6.0
    return WcDnn(
        mean=np.zeros(len(AWC_FEATURE_NAMES)),
        scale=np.ones(len(AWC_FEATURE_NAMES)),
        input=DenseLayer(weight, np.array([-2.0])),
        blocks=((zero, zero), (zero, zero)),
        output=DenseLayer(np.array([[2.0]]), np.zeros(1)),
    )


def load_sensitive_wc_dnn() -> WcDnn:
    """Two units, residual blocks zero. Acceptance: 2·silu(silu(6·acceptance − 2)) (≈ −0.2
    at 0, 1.0 at 0.5, 7.7 at 1). Load: −silu(silu(Σ w·feature − 60)) with
    :data:`LOAD_WEIGHTS`, so a host that misreports its queue depth, RTT or TPOT decides
    otherwise."""
    weight = np.zeros((len(AWC_FEATURE_NAMES), 2))
    weight[AWC_FEATURE_NAMES.index("recent_acceptance"), 0] = 6.0
    for name, value in LOAD_WEIGHTS.items():
        weight[AWC_FEATURE_NAMES.index(name), 1] = value
    zero = DenseLayer(np.zeros((2, 2)), np.zeros(2))
    return WcDnn(
        mean=np.zeros(len(AWC_FEATURE_NAMES)),
        scale=np.ones(len(AWC_FEATURE_NAMES)),
        input=DenseLayer(weight, np.array([-2.0, LOAD_BIAS])),
        blocks=((zero, zero), (zero, zero)),
        output=DenseLayer(np.array([[2.0], [-1.0]]), np.zeros(1)),
    )


class Recorded:
    """A window policy that records each observation it is shown and each decision it
    makes (its pair state forwarded)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.observations: list[WindowObservation] = []
        self.decisions: list[WindowDecision] = []

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.observations.append(obs)
        decision: WindowDecision = self.inner.next_window(obs)
        self.decisions.append(decision)
        return decision

    def pair_state(self, pair: str) -> tuple[float, ...]:
        inner = self.inner
        return inner.pair_state(pair) if isinstance(inner, PairStateWindow) else ()

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None:
        if isinstance(self.inner, PairStateWindow):
            self.inner.restore_pair_state(pair, state)


EXACT_FIELDS = ("previous_gamma", "last_num_accepted", "queue_depth", "previous_fused")


def assert_same_observations(
    runtime: Sequence[WindowObservation], simulated: Sequence[WindowObservation]
) -> None:
    """Round by round, the fields both hosts must agree on: the counts, the queue depth and
    the mode exactly, the recent acceptance to 1e-12, which rounds have a TPOT. RTT and TPOT
    values are each host's clock (:func:`assert_rtt_is_the_rounds_network` checks RTT
    within a host); ``pair`` is each host's name for it, one per session."""
    assert len(runtime) == len(simulated)
    for i, (real, sim) in enumerate(zip(runtime, simulated, strict=True)):
        for name in EXACT_FIELDS:
            assert getattr(real, name) == getattr(sim, name), f"round {i}: {name}"
        if sim.recent_acceptance is None:
            assert real.recent_acceptance is None, f"round {i}: recent_acceptance"
        else:
            assert real.recent_acceptance == pytest.approx(sim.recent_acceptance, abs=1e-12)
        assert (real.tpot_s is None) == (sim.tpot_s is None), f"round {i}: tpot_s"
        for obs in (real, sim):
            assert obs.tpot_s is None or 0.0 < obs.tpot_s < math.inf, f"round {i}: tpot_s"
    assert len({o.pair for o in runtime}) == len({o.pair for o in simulated}) == 1


def assert_rtt_is_the_rounds_network(
    observations: Sequence[WindowObservation], rounds: Sequence[RoundRecord]
) -> None:
    """Each observation's ``rtt_s`` is the uplink + downlink of the host's own last
    distributed round before it (0 before the first), to 1e-12 s."""
    network_s = 0.0
    for i, (obs, record) in enumerate(zip(observations, rounds, strict=True)):
        assert obs.rtt_s == pytest.approx(network_s, abs=1e-12), f"round {i}: rtt_s"
        if not record.fused:
            network_s = record.uplink_s + record.downlink_s
