"""The endpoint's file descriptors: how many connections the open-file limit leaves room
for, and what is logged when ``accept()`` runs out of them anyway.

Each HTTP connection is a file descriptor. With ``MAX_CONNECTIONS`` over the process's
open-file limit (``RLIMIT_NOFILE``, often 1,024), ``accept()`` fails with ``EMFILE`` before
the cap's 503 can answer: the connections wait in the listen queue until their clients
give up, and asyncio logs a traceback for every failed ``accept()`` (a backlog's worth a
second). So the endpoint caps its connections at the soft limit less a reserve
(:func:`connection_cap`), :func:`raise_open_file_limit` (called by ``serve_openai`` as it
starts, nowhere else) raises the soft limit towards the hard one to make room for
``MAX_CONNECTIONS``, and :class:`AcceptErrorLog` logs such failures in one line at most
every ``throttle.LOG_INTERVAL_S`` (:mod:`.throttle`).
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgespec.runtime.open_files import LimitNotRaised, raise_soft_limit
from edgespec.runtime.openai_api.throttle import LOG_INTERVAL_S, Throttle

LOG = logging.getLogger(__name__)

ACCEPT_BACKLOG = 64
"""The listen backlog, also the most connections asyncio accepts in one turn of its loop."""
ACCEPTING_FDS = 4 * ACCEPT_BACKLOG
"""Descriptors of connections accepted and not yet refused: one over the cap is closed
about three turns of the loop after its ``accept()``, and each turn accepts a backlog's
worth (measured: 441 descriptors at most with a backlog of 128 and 3,000 connections at
once). The reserve counts them, so a flood of connections gets 503s, not ``EMFILE``."""
SPARE_FDS = 64
"""Descriptors kept free beyond those open when the endpoint starts (the gRPC channels'
reconnections, a log file, the tokenizer's files)."""
_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


@dataclass(frozen=True, slots=True)
class FileBudget:
    """``max_connections`` the endpoint takes: the wanted number, or the soft open-file
    limit ``soft_limit`` (``None``: unlimited) less ``reserved`` descriptors if fewer."""

    soft_limit: int | None
    reserved: int
    max_connections: int


def open_fds() -> int:
    """How many descriptors this process has open (listed in ``/dev/fd``)."""
    return len(os.listdir("/dev/fd"))


def reserve() -> int:
    """Descriptors not for connections: those open now, those of connections being
    accepted, a spare."""
    return open_fds() + ACCEPTING_FDS + SPARE_FDS


def _soft_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def connection_cap(wanted: int, soft_limit: int | None, reserved: int) -> FileBudget:
    """At most ``wanted`` connections, and at most the soft open-file limit less
    ``reserved``; ``OSError`` when that leaves none."""
    if soft_limit is None:
        return FileBudget(None, reserved, wanted)
    room = soft_limit - reserved
    if room < 1:
        raise OSError(f"the open-file limit (RLIMIT_NOFILE) is {soft_limit} and this "
                      f"process keeps {reserved} descriptors for itself: no room for HTTP "
                      f"connections; raise it (ulimit -n)")  # fmt: skip
    return FileBudget(soft_limit, reserved, min(wanted, room))


def file_budget(wanted: int) -> FileBudget:
    """:func:`connection_cap` under this process's limit and open descriptors now."""
    return connection_cap(wanted, _soft_limit(), reserve())


def raise_open_file_limit(wanted: int) -> tuple[int, int] | None:
    """Raise the process's soft open-file limit to what ``wanted`` connections and the
    :func:`reserve` need, or to the hard limit if that is lower; ``(old, new)`` soft
    limits when raised, ``None`` when it had room already or may not be raised (logged).
    A process-wide change: only the serving command calls it, as it starts."""
    try:
        return raise_soft_limit(wanted + reserve())
    except LimitNotRaised as exc:
        LOG.warning("could not raise the open-file limit %s", exc)
        return None


class AcceptErrorLog:
    """An asyncio exception handler: ``accept()`` out of descriptors (or memory) logged
    in one line at most every ``interval_s``, with how often it failed since; anything
    else to the loop's default handler."""

    def __init__(
        self, interval_s: float = LOG_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._throttle = Throttle(interval_s, clock)

    def __call__(self, loop: Any, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if not isinstance(exc, OSError) or exc.errno not in _OUT_OF_RESOURCES:
            loop.default_exception_handler(context)
            return
        failed = self._throttle.due()
        if failed is None:
            return
        soft = _soft_limit()
        LOG.warning("the OpenAI-compatible endpoint could not accept connections: %s "
                    "(%d failed accept() calls since the last such line; the open-file "
                    "limit is %s)",
                    exc.strerror, failed,
                    "unlimited" if soft is None else soft)  # fmt: skip
