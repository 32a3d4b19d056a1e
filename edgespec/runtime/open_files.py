"""The process's open-file limit (``RLIMIT_NOFILE``), raised for the connections a server
takes: both servers' listeners (the gRPC server, ``wire.grpc_limits``; the HTTP endpoint,
``openai_api.descriptors``) decide how much they need and what a refusal means; this is
how the soft limit is raised. A process-wide change: only a serving command's start calls
it."""

from __future__ import annotations

import resource


class LimitNotRaised(Exception):
    """``setrlimit`` refused to raise the soft limit from ``soft`` to ``new`` (a platform's
    own ceiling, e.g. macOS's ``OPEN_MAX``); ``reason`` is what it said."""

    def __init__(self, soft: int, new: int, reason: Exception) -> None:
        super().__init__(f"from {soft} to {new}: {reason}")
        self.soft, self.new, self.reason = soft, new, reason


def raise_soft_limit(needed: int) -> tuple[int, int] | None:
    """Raise the soft limit to ``needed``, or to the hard limit if that is lower; ``(old,
    new)`` soft limits when raised, ``None`` when it had room already or the hard limit
    leaves none to gain; :class:`LimitNotRaised` when ``setrlimit`` refuses."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    new = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
    if new <= soft:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    except (OSError, ValueError) as exc:
        raise LimitNotRaised(soft, new, exc) from exc
    return soft, new
