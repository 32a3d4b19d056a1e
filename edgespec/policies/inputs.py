"""The one place that builds what a window policy sees, for the simulator and the real
drafter alike.

Each host keeps one :class:`WindowHistory` per session. Call order, every round:

1. ``obs = history.observation(now_s)`` → ``decision = decide_window(policy, obs)``
   (:mod:`edgespec.policies.contracts`: asked and checked); the host then caps γ to
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
  rounds that drafted (a token tree counts its depth, not its nodes); ``None`` before any
  drafting. A round that drafted nothing (a ``cloud_only`` fused round, a last round with
  one token left) leaves it as it was: the last drafting rounds' acceptance is kept.
- ``last_num_accepted``: accepted draft tokens of the last round (``None`` before).
- ``queue_depth``: the server's queue depth reported with the last verdict (0 before).
- ``rtt_s``: the last distributed round's network time, uplink + downlink (0.0 before the
  first); fused rounds do not cross the network per round and leave it unchanged.
- ``previous_fused``: whether the last round ran fused.
- ``tpot_s``: time per output token since the first one,
  (now − first token) / (committed − 1), ``None`` until two tokens exist.
- ``pair``: the draft–target pair the history was made for (``WindowHistory(pair)``).

A session's history moves between hosts as a
:class:`~edgespec.policies.history_snapshot.HistorySnapshot`
(:meth:`WindowHistory.snapshot` / :meth:`WindowHistory.from_snapshot`): the device hands it
to the server with a fused request and gets it back when the fused run ends. It holds no
clock value, only the first token's age, because the two hosts' clocks differ. It also
carries the window policy's own state for the pair (``window_state``, for a
:class:`~edgespec.policies.interfaces.PairStateWindow` such as AWC), so that the device's
and the server's policy objects decide as the simulator's single object does.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from edgespec.core.frozen import frozen_builder
from edgespec.policies.history_snapshot import MAX_HISTORY_S, RECENT_ROUNDS, HistorySnapshot
from edgespec.policies.interfaces import WindowObservation

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
        "_pair",
        "_queue_depth",
        "_recent",
        "_rounds",
    )

    def __init__(self, pair: str = "") -> None:
        self._pair = pair  # WindowObservation.pair
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
        drafted, accepted = self._drafted, self._accepted
        if num_drafted:
            recent = self._recent
            recent.append((num_drafted, num_accepted))
            drafted += num_drafted
            accepted += num_accepted
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
            self._pair,
        )

    def snapshot(self, now_s: float, window_state: tuple[float, ...] = ()) -> HistorySnapshot:
        """This history at ``now_s`` (the first token's time as its age then, saturated at
        :data:`MAX_HISTORY_S`), carrying the window policy's ``window_state`` for the pair."""
        first = self._first_token_s
        age = None if first is None else min(max(now_s - first, 0.0), MAX_HISTORY_S)
        return HistorySnapshot(
            recent=tuple(self._recent),
            num_rounds=self._rounds,
            gamma=self._gamma,
            last_num_accepted=self._last_accepted,
            num_committed_total=self._committed,
            queue_depth=self._queue_depth,
            network_s=self._network_s,
            fused=self._fused,
            first_token_age_s=age,
            window_state=window_state,
        )

    @classmethod
    def from_snapshot(
        cls, snapshot: HistorySnapshot, now_s: float, pair: str = ""
    ) -> WindowHistory:
        """The history ``snapshot`` describes, on a host whose clock reads ``now_s``, for
        the draft–target pair this host names ``pair``."""
        history = cls(pair)
        history._recent.extend(snapshot.recent)
        history._drafted = sum(d for d, _ in snapshot.recent)
        history._accepted = sum(a for _, a in snapshot.recent)
        history._rounds = snapshot.num_rounds
        history._gamma = snapshot.gamma
        history._last_accepted = snapshot.last_num_accepted
        history._committed = snapshot.num_committed_total
        history._queue_depth = snapshot.queue_depth
        history._network_s = snapshot.network_s
        history._fused = snapshot.fused
        age = snapshot.first_token_age_s
        history._first_token_s = None if age is None else now_s - age
        return history

    def observation(self, now_s: float) -> WindowObservation:
        if not self._rounds:
            return WindowObservation(previous_gamma=0, recent_acceptance=None, pair=self._pair)
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
            self._pair,
        )
