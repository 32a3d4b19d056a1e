"""The server's window keeps a pair's state only while a fused run holds it
(:class:`ServerWindow`, :class:`PairHold`): the device owns it between runs, so what a
client names (``client_id``) cannot grow the server's memory."""

from __future__ import annotations

import pytest

from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.runtime.errors import RequestError
from edgespec.runtime.server.fused_setup import ServerWindow


class _Keeping:
    """A pair-state window policy that keeps a dict, as AWC does."""

    def __init__(self) -> None:
        self.states: dict[str, tuple[float, ...]] = {}

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(2)

    def pair_state(self, pair: str) -> tuple[float, ...]:
        return self.states.get(pair, ())

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None:
        if state and state[0] < 0:
            raise ValueError("negative")
        if state:
            self.states[pair] = state
        else:
            self.states.pop(pair, None)


def test_every_pair_is_forgotten_when_its_run_hands_its_state_back() -> None:
    policy = _Keeping()
    window = ServerWindow(policy, 64)
    for k in range(100):
        hold = window.hold(f"client-{k}", (float(k),))
        assert hold.hand_back() == (float(k),)
        hold.close()  # a no-op after hand_back
    assert policy.states == {} and window.num_pairs_held == 0


def test_a_run_that_fails_releases_its_pair_too() -> None:
    policy = _Keeping()
    window = ServerWindow(policy, 64)
    hold = window.hold("p", (1.0,))
    assert policy.states == {"p": (1.0,)} and window.num_pairs_held == 1
    hold.close()
    assert policy.states == {} and window.num_pairs_held == 0


def test_the_last_of_two_runs_of_one_pair_resets_it() -> None:
    policy = _Keeping()
    window = ServerWindow(policy, 64)
    first = window.hold("p", (1.0,))
    second = window.hold("p", (2.0,))
    assert first.hand_back() == (2.0,)  # one state per pair, as in the simulator
    assert policy.states == {"p": (2.0,)}  # the second run still holds it
    assert second.hand_back() == (2.0,)
    assert policy.states == {} and window.num_pairs_held == 0


def test_a_refused_state_holds_nothing() -> None:
    policy = _Keeping()
    window = ServerWindow(policy, 64)
    with pytest.raises(RequestError):
        window.hold("p", (-1.0,))
    assert window.num_pairs_held == 0


class _Raising(_Keeping):
    def pair_state(self, pair: str) -> tuple[float, ...]:
        raise RuntimeError("state bug")


def test_a_hand_back_that_raises_still_ends_the_hold() -> None:
    policy = _Raising()
    window = ServerWindow(policy, 64)
    hold = window.hold("p", (1.0,))
    with pytest.raises(RuntimeError, match="state bug"):
        hold.hand_back()
    assert window.num_pairs_held == 0 and policy.states == {}


def test_closing_a_failed_run_does_not_ask_for_its_state() -> None:
    """A failed run hands nothing back: a policy whose state raises cannot hide the run's
    own error behind its own."""
    policy = _Raising()
    window = ServerWindow(policy, 64)
    window.hold("p", (1.0,)).close()
    assert window.num_pairs_held == 0 and policy.states == {}
