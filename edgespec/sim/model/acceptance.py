"""Acceptance models: how many of γ drafted tokens the target accepts in a round.

All share :class:`AcceptanceModel`. ``position`` is the request's number of committed
output tokens when the round was drafted, so the drafted tokens sit at output positions
``position .. position + γ - 1``.

* :class:`TraceAcceptance` — replays captured ``acceptance_seq`` s. Entry ``j`` of a
  sequence says whether the draft's token at output position ``j`` (drafted on the
  target's own prefix) matches the target. Under greedy decoding this is a property of
  the position alone, so replay is exact for any γ: a round accepts the run of 1s that
  starts at ``position``, capped at γ. Sequences shorter than the output wrap around.
  A sampled capture's pool sequences may be redrawn per request from their α
  (:func:`redrawn_sequence`, ``acceptance.sampled_draws: redrawn``).
* :class:`IidAcceptance` — each drafted token accepted independently with probability α.
* :class:`DecayAcceptance` — per-position conditional rates: the k-th drafted token of a
  round is accepted with probability ``rates[k]`` given all before it were (the last
  rate repeats for longer windows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from edgespec.sim.model.rng import UniformStream

REDRAW_STREAM = 0x5A3D
"""Names the random streams of redrawn outcomes (:func:`redrawn_sequence`), apart from the
run's other draws: a redraw changes no arrival, routing or link draw."""


def redrawn_sequence(alphas: Sequence[float], *key: int) -> tuple[int, ...]:
    """An acceptance sequence whose position i is 1 with probability ``alphas[i]``,
    independently, from the stream ``key`` names (with :data:`REDRAW_STREAM`)."""
    uniforms = np.random.default_rng([REDRAW_STREAM, *key]).random(len(alphas))
    return tuple(int(u < a) for u, a in zip(uniforms, alphas, strict=True))


class AcceptanceModel(Protocol):
    """Number of accepted draft tokens L in 0..γ for one round."""

    def accepted(
        self, seq: Sequence[int] | None, position: int, gamma: int, rng: UniformStream
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class TraceAcceptance:
    """Replay of captured acceptance sequences; ``pool`` serves requests that carry none.
    ``pool_features`` / ``pool_rejections``: each pool sequence's per-position draft
    features and rejection continuations, where its trace recorded them (for a stop
    predictor, :mod:`edgespec.sim.model.stop_model`)."""

    pool: tuple[tuple[int, ...], ...] = ()
    pool_features: tuple[tuple[tuple[float, ...], ...] | None, ...] = ()
    pool_rejections: tuple[Mapping[int, tuple[tuple[float, ...], ...]] | None, ...] = ()
    pool_alphas: tuple[tuple[float, ...] | None, ...] = ()
    """Each pool sequence's α per position (``None``: a greedy capture's); read only with
    ``redraw_seed``."""
    redraw_seed: int | None = None
    """Set (the run's seed): a request drawing a sequence that has an α gets one redrawn
    from it (:func:`redrawn_sequence`, keyed by the seed, its cell and its index there),
    not the captured one."""
    mean_row_entries: float = 0.0
    """The entries the draft's row kept per position, on average over the replayed captures
    made at the scenario's sampling that recorded them (``draft_row_entries``; 0: none):
    what a compact uplink row is charged (:class:`~edgespec.core.link_delay.DraftRows`)."""

    def seq_for(self, request_index: int, cell: int | None = None) -> tuple[int, ...]:
        """The sequence of the ``request_index``-th request (of ``cell``, a pinned cell's
        number in the scenario, whose requests count on their own; ``None``: the run's)."""
        if not self.pool:
            raise ValueError("trace acceptance: request has no acceptance_seq and no pool")
        k = request_index % len(self.pool)
        alphas = self.pool_alphas[k] if self.redraw_seed is not None else None
        if alphas is None:
            return self.pool[k]
        assert self.redraw_seed is not None
        where = (1,) if cell is None else (2, cell)  # a cell's draws are its own
        return redrawn_sequence(alphas, self.redraw_seed, *where, request_index)

    def accepted(
        self, seq: Sequence[int] | None, position: int, gamma: int, rng: UniformStream
    ) -> int:
        if not seq:
            raise ValueError("trace acceptance needs a non-empty acceptance_seq")
        n = len(seq)
        for k in range(gamma):
            if not seq[(position + k) % n]:
                return k
        return gamma


@dataclass(frozen=True, slots=True)
class IidAcceptance:
    """Each drafted token accepted with probability ``alpha``, independently."""

    alpha: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")

    def accepted(
        self, seq: Sequence[int] | None, position: int, gamma: int, rng: UniformStream
    ) -> int:
        alpha = self.alpha
        for k in range(gamma):
            if rng.next() >= alpha:
                return k
        return gamma


@dataclass(frozen=True, slots=True)
class DecayAcceptance:
    """Conditional acceptance rate by position in the window, ``rates[k]`` for token k."""

    rates: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.rates:
            raise ValueError("decay acceptance needs at least one rate")
        for k, rate in enumerate(self.rates):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"rates[{k}] must be in [0, 1], got {rate}")

    def accepted(
        self, seq: Sequence[int] | None, position: int, gamma: int, rng: UniformStream
    ) -> int:
        rates = self.rates
        last = len(rates) - 1
        for k in range(gamma):
            if rng.next() >= rates[k if k < last else last]:
                return k
        return gamma
