"""Decision heads for the tests of the head's contract in both hosts: a seeded random
:class:`DecisionHead`, and a head whose ``rejects`` answers whatever a test gives it
(the answers that break the contract, and the exact messages the hosts give for them),
:class:`BrokenHead`, over :class:`WrappedHead` (the base of a test head wrapping a real one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.policies.semantic.csi import NUM_CSI_FEATURES
from edgespec.policies.semantic.head import DecisionHead

FloatArray = npt.NDArray[np.float64]


def seeded_head(
    seed: int, draft_hidden: int = 8, target_hidden: int = 12, width: int = 6
) -> DecisionHead:
    """A head with seeded random weights over ``draft_hidden`` + ``target_hidden`` hidden
    values and the runtime's 4 CSI features (its p spread around every threshold)."""
    rng = np.random.default_rng(seed)
    d_in = draft_hidden + target_hidden + NUM_CSI_FEATURES
    return DecisionHead(
        draft_hidden,
        target_hidden,
        rng.normal(size=d_in) * 0.1,
        rng.uniform(0.5, 2.0, size=d_in),
        rng.normal(size=(d_in, width)),
        rng.normal(size=width) * 0.1,
        rng.normal(size=(width, 1)),
        rng.normal(size=1) * 0.1,
    )


@dataclass(frozen=True, slots=True, eq=False)
class WrappedHead:
    """A real head behind the head's interface, every call forwarded to it: the base of
    the test heads that record or break one of its calls."""

    head: DecisionHead

    @property
    def draft_hidden(self) -> int:
        return self.head.draft_hidden

    @property
    def target_hidden(self) -> int:
        return self.head.target_hidden

    @property
    def num_csi(self) -> int:
        return self.head.num_csi

    def inputs(
        self, draft_hidden: FloatArray, target_hidden: FloatArray, csi: tuple[float, ...]
    ) -> FloatArray:
        return self.head.inputs(draft_hidden, target_hidden, csi)

    def rejects(self, x: FloatArray, threshold: float) -> npt.NDArray[np.bool_]:
        return self.head.rejects(x, threshold)


@dataclass(frozen=True, slots=True, eq=False)
class BrokenHead(WrappedHead):
    """A real head's inputs, but ``rejects`` answers ``answer(n)`` for n input rows."""

    answer: Callable[[int], object]

    def rejects(self, x: FloatArray, threshold: float) -> npt.NDArray[np.bool_]:
        return self.answer(x.shape[0])  # type: ignore[return-value]  # broken on purpose


BROKEN_ANSWERS: dict[str, tuple[Callable[[int], object], Callable[[int], str]]] = {
    "one too many": (
        lambda n: np.zeros(n + 1, dtype=np.bool_),
        lambda n: f"a bool array of shape ({n + 1},)",
    ),
    "probabilities, not bools": (
        lambda n: np.full(n, 0.9),
        lambda n: f"a float64 array of shape ({n},)",
    ),
    "a column": (
        lambda n: np.zeros((n, 1), dtype=np.bool_),
        lambda n: f"a bool array of shape ({n}, 1)",
    ),
    "a list": (lambda n: [False] * n, lambda n: f"list {[False] * n!r}"),
}
"""Answers that break the contract for n mismatches, and how the error describes each."""


def contract_message(name: str, n: int) -> str:
    """The exact :class:`PolicyContractError` message for ``BROKEN_ANSWERS[name]``."""
    mismatches = "mismatch" if n == 1 else "mismatches"
    return (
        f"decision head BrokenHead returned {BROKEN_ANSWERS[name][1](n)} for {n} {mismatches}; "
        f"expected a 1-D bool array of shape ({n},), one bool per mismatch"
    )


def broken_head(name: str, seed: int = 0) -> BrokenHead:
    """A :class:`BrokenHead` over :func:`seeded_head` answering ``BROKEN_ANSWERS[name]``."""
    return BrokenHead(seeded_head(seed), BROKEN_ANSWERS[name][0])
