"""The one place that builds what a window policy sees, for the simulator and the real
drafter alike.

Each host keeps one :class:`WindowHistory` per session. Call order, every round:

1. ``obs = history.observation(now_s)`` → ``decision = check_window(policy,
   policy.next_window(obs))`` (:mod:`edgespec.policies.contracts`); the host then caps γ to
   the tokens still to generate (at most remaining − 1: the verifier adds one token) and
   drafts, on the device or, in a fused decision, with the server's co-located draft. The
   policy is consulted where the session's rounds run: the device in distributed rounds,
   the server during a run of fused rounds (it holds the session's history meanwhile), so
   consecutive fused rounds need no round trip.
2. After the verdict: ``history.record(outcome, now_s)`` with a :class:`RoundOutcome` (or
   ``history.record_round(...)`` with its fields, which the simulator uses: it returns the
   observation at ``now_s``, which the simulator passes on when the next round starts then).

A policy whose ``next_window`` reads nothing of its observation may say so with a class
attribute ``observes = False`` (:class:`~edgespec.policies.window.StaticWindow` does; see
:func:`observes`). A host may then skip the history and pass :data:`UNOBSERVED` every
round; the policy is still called every round and its answer still checked.

Meanings (:class:`~edgespec.policies.interfaces.WindowObservation`), the same in both hosts:

- ``previous_gamma``: the γ the policy answered last round, before the host capped it
  (0 before the first round), so a stateless policy can step from its own last answer.
- ``recent_acceptance``: accepted / drafted positions over the last :data:`RECENT_ROUNDS`
  rounds (a token tree counts its depth, not its nodes); ``None`` before any drafting.
- ``last_num_accepted``: accepted draft tokens of the last round (``None`` before).
- ``queue_depth``: the server's queue depth reported with the last verdict (0 before).
- ``rtt_s``: the last distributed round's network time, uplink + downlink (0.0 before the
  first); fused rounds do not cross the network per round and leave it unchanged.
- ``previous_fused``: whether the last round ran fused.
- ``tpot_s``: time per output token since the first one,
  (now − first token) / (committed − 1), ``None`` until two tokens exist.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from edgespec.core.frozen import frozen_builder
from edgespec.policies.interfaces import WindowObservation

RECENT_ROUNDS = 4
"""Rounds in ``recent_acceptance``."""

_observation = frozen_builder(WindowObservation)  # WindowObservation(...), built per round

UNOBSERVED = WindowObservation(previous_gamma=0, recent_acceptance=None)
"""What a host may pass to a window policy that does not observe (:func:`observes`)."""


def observes(policy: object) -> bool:
    """Whether the window policy reads its observation: unless it declares
    ``observes = False``, it does."""
    return getattr(policy, "observes", True) is not False


@dataclass(frozen=True, slots=True)
class RoundOutcome:
    """What a host learnt from one verified round of a session."""

    gamma: int
    """The policy's answer for the round (before capping)."""
    num_drafted: int
    """Draft positions verified (a token tree: its depth)."""
    num_accepted: int
    num_committed_total: int
    """Output tokens committed so far, this round's included."""
    network_s: float
    """Uplink + downlink time of the round."""
    queue_depth: int
    """The server's queue depth reported with the verdict."""
    fused: bool = False
    """Whether the round ran fused (then ``network_s`` is ignored)."""


class WindowHistory:
    """One session's rounds as window policies see them (see the module docstring)."""

    __slots__ = (
        "_accepted",
        "_committed",
        "_drafted",
        "_first_token_s",
        "_fused",
        "_gamma",
        "_last_accepted",
        "_network_s",
        "_queue_depth",
        "_recent",
        "_rounds",
    )

    def __init__(self) -> None:
        self._recent: deque[tuple[int, int]] = deque()
        self._drafted = self._accepted = 0  # sums over _recent
        self._rounds = 0
        # The last round's outcome, field by field (no RoundOutcome kept: the simulator
        # records millions of rounds through record_round).
        self._gamma = self._last_accepted = self._committed = self._queue_depth = 0
        self._network_s = 0.0
        self._fused = False
        self._first_token_s: float | None = None

    def record(self, outcome: RoundOutcome, now_s: float) -> None:
        self.record_round(
            outcome.gamma,
            outcome.num_drafted,
            outcome.num_accepted,
            outcome.num_committed_total,
            outcome.network_s,
            outcome.queue_depth,
            now_s,
            outcome.fused,
        )

    def record_round(
        self,
        gamma: int,
        num_drafted: int,
        num_accepted: int,
        num_committed_total: int,
        network_s: float,
        queue_depth: int,
        now_s: float,
        fused: bool = False,
    ) -> WindowObservation:
        """:meth:`record` with the :class:`RoundOutcome` fields passed one by one. Returns
        :meth:`observation` at ``now_s`` (for a host that starts the next round at once)."""
        first = self._first_token_s
        if first is None and num_committed_total > 0:
            first = self._first_token_s = now_s
        recent = self._recent
        recent.append((num_drafted, num_accepted))
        drafted = self._drafted + num_drafted
        accepted = self._accepted + num_accepted
        if len(recent) > RECENT_ROUNDS:
            old_drafted, old_accepted = recent.popleft()
            drafted -= old_drafted
            accepted -= old_accepted
        self._drafted = drafted
        self._accepted = accepted
        self._rounds += 1
        self._gamma = gamma
        self._last_accepted = num_accepted
        self._committed = num_committed_total
        if fused:
            network_s = self._network_s
        else:
            self._network_s = network_s
        self._queue_depth = queue_depth
        self._fused = fused
        return _observation(
            gamma,
            accepted / drafted if drafted else None,
            num_accepted,
            queue_depth,
            network_s,
            (now_s - first) / (num_committed_total - 1)
            if first is not None and num_committed_total > 1
            else None,
            fused,
        )

    def observation(self, now_s: float) -> WindowObservation:
        if not self._rounds:
            return WindowObservation(previous_gamma=0, recent_acceptance=None)
        committed = self._committed
        first = self._first_token_s
        return _observation(
            self._gamma,
            self._accepted / self._drafted if self._drafted else None,
            self._last_accepted,
            self._queue_depth,
            self._network_s,
            (now_s - first) / (committed - 1) if first is not None and committed > 1 else None,
            self._fused,
        )
