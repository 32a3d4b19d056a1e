"""A session's window history as it crosses between hosts: :class:`HistorySnapshot`, the
frozen, validated value :meth:`edgespec.policies.inputs.WindowHistory.snapshot` makes and
:meth:`~edgespec.policies.inputs.WindowHistory.from_snapshot` resumes from (durations only,
no clock value: the two hosts' clocks differ), with its bounds. It crosses the wire in a
fused request and its reply, so every field is checked when it is built."""

from __future__ import annotations

import math
from dataclasses import dataclass

RECENT_ROUNDS = 4
"""Rounds in ``recent_acceptance``."""
MAX_HISTORY_COUNT = 2**31 - 1
"""The largest count a :class:`HistorySnapshot` takes: the wire carries them as uint32, and
a run that goes on counting from a larger one would overflow its reply's."""

MAX_WINDOW_STATE = 64
"""The most numbers a :class:`HistorySnapshot`'s ``window_state`` holds (AWC keeps 3): a
device's snapshot is otherwise bounded only by the message limit (~1M floats), and a server
without a window policy hands it back as it came."""

MAX_HISTORY_S = 1e6
"""The longest duration a :class:`HistorySnapshot` takes (11.6 days): a policy computing on a
larger one (AWC's network feature) could overflow to inf and decide on a NaN."""


@dataclass(frozen=True, slots=True)
class HistorySnapshot:
    """Everything a :class:`WindowHistory` holds, host-neutral: times as durations only.
    Validated on construction (it crosses the wire): a bad field is a ``ValueError``
    naming it."""

    recent: tuple[tuple[int, int], ...] = ()
    """(drafted, accepted) positions of the last rounds, oldest first, at most
    :data:`RECENT_ROUNDS`."""
    num_rounds: int = 0
    gamma: int = 0
    """The last round's answered γ (``previous_gamma``)."""
    last_num_accepted: int = 0
    num_committed_total: int = 0
    queue_depth: int = 0
    network_s: float = 0.0
    """The last distributed round's network time (``rtt_s``)."""
    fused: bool = False
    """Whether the last round ran fused."""
    first_token_age_s: float | None = None
    """How long ago the first output token was committed; ``None`` before it."""
    window_state: tuple[float, ...] = ()
    """The window policy's state for the session's pair, when it keeps one
    (:class:`~edgespec.policies.interfaces.PairStateWindow`; opaque to the hosts)."""

    def __post_init__(self) -> None:
        problem = _snapshot_problem(self)
        if problem is not None:
            raise ValueError(f"history snapshot: {problem}")


def _snapshot_problem(s: HistorySnapshot) -> str | None:
    names = ("num_rounds", "gamma", "last_num_accepted", "num_committed_total", "queue_depth")
    counts = {name: getattr(s, name) for name in names}
    for name, value in counts.items():
        if type(value) is not int or not 0 <= value <= MAX_HISTORY_COUNT:
            return f"{name} must be an integer in [0, {MAX_HISTORY_COUNT}], got {value!r}"
    if len(s.recent) > min(RECENT_ROUNDS, s.num_rounds):
        return (f"recent holds {len(s.recent)} rounds; at most {RECENT_ROUNDS} and at most "
                f"num_rounds ({s.num_rounds})")  # fmt: skip
    for drafted, accepted in s.recent:
        if not 0 <= accepted <= drafted <= MAX_HISTORY_COUNT:
            return (f"recent round ({drafted}, {accepted}) needs 0 <= accepted <= drafted <= "
                    f"{MAX_HISTORY_COUNT}")  # fmt: skip
    durations = {"network_s": s.network_s, "first_token_age_s": s.first_token_age_s or 0.0}
    for name, duration in durations.items():
        if not (math.isfinite(duration) and duration >= 0):
            return f"{name} must be finite and >= 0, got {duration}"
        if duration > MAX_HISTORY_S:
            return f"{name} must be at most {MAX_HISTORY_S:g} s, got {duration:g}"
    if len(s.window_state) > MAX_WINDOW_STATE:
        return f"window_state holds {len(s.window_state)} numbers; at most {MAX_WINDOW_STATE}"
    for number in s.window_state:
        if not (type(number) is float and math.isfinite(number)):
            return f"window_state must hold finite floats, got {number!r}"
    return None
