"""Buffered uniform random streams: one per entity, so draw order never depends on how
events from different entities interleave (the fast and the straightforward simulator
paths then consume identical numbers)."""

from __future__ import annotations

from collections.abc import Iterable

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


STREAM_BLOCK = 32
"""Draws per refill of a simulated entity's stream: a device takes about two per round, and
a fleet of 100,000 devices holds one buffer each (memory, not values: see UniformStream)."""


def spawn_streams(seed: int, name: str, indices: Iterable[int]) -> list[UniformStream]:
    """Independent streams for purpose ``name`` under the scenario seed, one per index.

    Stream ``i`` is the ``i``-th child of the ``(seed, name)`` seed sequence (what
    ``SeedSequence.spawn`` gives its ``i``-th child), whatever the other indices are: a
    device's stream depends on its index only, not on the fleet's size nor on which devices
    run in this process (a shard of a cell-pinned scenario, :mod:`edgespec.sim.shards`).
    """
    key = [seed, *name.encode()]
    return [
        UniformStream(
            np.random.Generator(np.random.PCG64(np.random.SeedSequence(key, spawn_key=(i,)))),
            STREAM_BLOCK,
        )
        for i in indices
    ]


def spawn_generator(seed: int, name: str, index: int | None = None) -> np.random.Generator:
    """One numpy Generator for purpose ``name`` (routing tie-breaks, workload sampling);
    with ``index``, the ``index``-th child of that sequence (one per cell of a scenario
    whose device pools are pinned to server pools, the same in every shard)."""
    key = [seed, *name.encode()]
    spawn_key = () if index is None else (index,)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(key, spawn_key=spawn_key)))
