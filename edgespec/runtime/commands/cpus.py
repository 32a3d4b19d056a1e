"""``--cpus`` and ``--threads``: a command's process bound to CPUs of its own, and torch's
intra-op threads (:func:`edgespec.arguments.add_threads_and_cpus`)."""

from __future__ import annotations


def apply_cpus_and_threads(cpus: tuple[int, ...] | None, threads: int | None) -> None:
    """Bind this process to ``cpus`` (``None``: leave it as it is) and torch's intra-op
    threads to ``threads``, else to the number of ``cpus`` (both ``None``: torch's default
    stays). Threads the process starts later (the endpoint's workers) take the same count.
    Call it before a model loads."""
    if cpus is None and threads is None:
        return
    import os

    import torch

    if cpus is not None:
        os.sched_setaffinity(0, cpus)
    torch.set_num_threads(threads if threads is not None else len(cpus or ()))


def thread_count(cpus: tuple[int, ...] | None, threads: int | None) -> int | None:
    """The threads a llama.cpp model runs on: ``threads``, else one per ``--cpus`` CPU
    (``None``: llama.cpp's default, 4, whatever the CPUs): what torch gets from
    :func:`apply_cpus_and_threads`."""
    return threads if threads is not None else (len(cpus) if cpus else None)
