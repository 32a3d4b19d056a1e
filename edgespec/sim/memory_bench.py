"""``edgespec bench memory``: what one random access to a Python object's float costs as
the number of objects grows, on this machine.

The simulator's per-round work touches a session, its device, the device's random stream
and a few heap entries, each a separate Python object (a float attribute is a pointer to
a float object of its own). While the objects a round may touch fit in the CPU caches,
each access costs about the interpreter's work; once they no longer fit, each access also
waits for memory. This benchmark isolates that cost: ``num_objects`` slotted objects
holding a float, read in a random order (the same order for a seed), reported as
nanoseconds per access (best of ``repeat``, process CPU time). The step between the sizes
is the memory-latency cliff that docs/PERFORMANCE.md (*Fleet scale*) measures the
simulator against.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

SIZES = (2_000, 20_000, 100_000, 1_000_000)
"""Object counts: the bench scenario's devices at 2k/20k/100k, and 1M."""


class _Holder:
    """One simulated entity: a float behind a slot (a pointer to a float object)."""

    __slots__ = ("value",)

    def __init__(self, value: float) -> None:
        self.value = value


@dataclass(frozen=True, slots=True)
class AccessCost:
    """ns per random access to one of ``num_objects`` objects' float."""

    num_objects: int
    num_accesses: int
    ns_per_access: float


def access_cost(
    num_objects: int, num_accesses: int, rng: random.Random, repeat: int = 3
) -> AccessCost:
    """Time ``num_accesses`` reads of ``holder.value`` in a random order over
    ``num_objects`` holders (best of ``repeat`` passes over the same order)."""
    if num_objects < 1 or num_accesses < 1 or repeat < 1:
        raise ValueError(
            f"num_objects, num_accesses and repeat must be >= 1, "
            f"got {num_objects}, {num_accesses}, {repeat}"
        )
    holders = [_Holder(rng.random()) for _ in range(num_objects)]
    order = [holders[rng.randrange(num_objects)] for _ in range(num_accesses)]
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        total = 0.0
        for holder in order:
            total += holder.value
        best = min(best, time.process_time() - started)
    return AccessCost(num_objects, num_accesses, best / num_accesses * 1e9)


def access_costs(
    sizes: Sequence[int] = SIZES, num_accesses: int = 2_000_000, seed: int = 0
) -> list[AccessCost]:
    """:func:`access_cost` at each size, one after the other (a seeded order each)."""
    return [access_cost(n, num_accesses, random.Random(seed)) for n in sizes]
