"""``--cpus``: a command's process bound to CPUs of its own
(:func:`edgespec.arguments.add_cpus`)."""

from __future__ import annotations


def pin_to_cpus(cpus: tuple[int, ...] | None) -> None:
    """Bind this process to ``cpus`` and torch's threads to their number (``None``: leave
    both as they are). Call it before a model loads."""
    if cpus is None:
        return
    import os

    import torch

    os.sched_setaffinity(0, cpus)
    torch.set_num_threads(len(cpus))
