"""Buffered uniform random streams: one per entity, so draw order never depends on how
events from different entities interleave (every handler set then consumes identical
numbers)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import numpy as np


class UniformStream:
    """Uniform [0, 1) doubles from a numpy Generator, drawn in blocks.

    ``Generator.random(n)`` yields the same doubles as ``n`` single draws, so blocking
    changes speed only, never values.

    ``buffer`` and ``index`` are public: ``buffer[index:]`` are the next draws, and the
    fast path (:mod:`edgespec.sim.fast.batch_end`) takes them directly, advancing ``index``
    (only while ``index < len(buffer)``; :meth:`next` refills). The buffer is an
    ``array('d')`` refilled in place: 8 bytes a draw, and a draw read from it is a new
    float rather than one of a block of float objects last touched long ago (a fleet of
    100,000 devices holds 100,000 buffers).
    """

    __slots__ = ("_gen", "buffer", "index")

    def __init__(self, gen: np.random.Generator, block: int = 256) -> None:
        if block < 1:
            raise ValueError(f"a stream's block must be at least 1 draw, got {block}")
        self._gen = gen
        self.buffer = array("d", bytes(8 * block))
        self.index = block  # empty: the first draw refills

    def next(self) -> float:
        i = self.index
        if i == len(self.buffer):
            # a view made per refill (one held per stream would cost 100+ bytes each)
            self._gen.random(out=np.frombuffer(self.buffer, dtype=np.float64))
            i = 0
        self.index = i + 1
        return self.buffer[i]


STREAM_BLOCK = 128
"""Draws per refill of a simulated entity's stream: a device takes about two per round, and
a fleet of 100,000 devices holds one 1 KiB buffer each (memory, not values: see
UniformStream)."""


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
