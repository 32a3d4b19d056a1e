"""Buffered uniform random streams: one per entity, so draw order never depends on how
events from different entities interleave (the fast and the straightforward simulator
paths then consume identical numbers)."""

from __future__ import annotations

import numpy as np


class UniformStream:
    """Uniform [0, 1) doubles from a numpy Generator, drawn in blocks.

    ``Generator.random(n)`` yields the same doubles as ``n`` single draws, so blocking
    changes speed only, never values.

    ``buffer`` and ``index`` are public: ``buffer[index:]`` are the next draws, and the
    fast path (:mod:`edgespec.sim.fastpath`) takes them directly, advancing ``index``
    (only while ``index < len(buffer)``; :meth:`next` refills).
    """

    __slots__ = ("_block", "_gen", "buffer", "index")

    def __init__(self, gen: np.random.Generator, block: int = 256) -> None:
        self._gen = gen
        self._block = block
        self.buffer: list[float] = []
        self.index = 0

    def next(self) -> float:
        i = self.index
        if i == len(self.buffer):
            self.buffer = self._gen.random(self._block).tolist()
            i = 0
        self.index = i + 1
        return self.buffer[i]


def spawn_streams(seed: int, name: str, count: int) -> list[UniformStream]:
    """``count`` independent streams for purpose ``name`` under the scenario seed."""
    key = [seed, *name.encode()]
    children = np.random.SeedSequence(key).spawn(count)
    return [UniformStream(np.random.Generator(np.random.PCG64(c))) for c in children]


def spawn_generator(seed: int, name: str) -> np.random.Generator:
    """One numpy Generator for purpose ``name`` (routing tie-breaks, workload sampling)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *name.encode()])))
