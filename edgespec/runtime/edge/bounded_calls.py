"""Calls that wait for their answer less than the verifier's request timeout.

A verifier has one request timeout for every call. An open retried while a server is
unreachable (:func:`~edgespec.runtime.edge.reconnect.retry_within`) may wait only as long
as is left of its retry window, and a verify call only as long as is left of the
generation's progress budget (:mod:`~edgespec.runtime.edge.progress`; the drafting
server's ``progress_timeout_s``): otherwise the last resend of a call past its deadline
would outlive the budget by up to one request timeout. A verifier that can wait less (the
gRPC client, and the wrappers around it) says so by a method of its own
(:class:`BoundedOpen`, :class:`BoundedVerify`); :func:`open_bounded` and
:func:`verify_bounded` use it when it is there, and the plain call otherwise (an
in-process verifier answers at once).
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from edgespec.runtime.edge.rounds import Verifier, Verifies
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply


@runtime_checkable
class BoundedOpen(Protocol):
    """A verifier whose open can wait for its answer less than its other calls do, and be
    cut short by a cancel event: ``open_within(spec, timeout_s, cancel)`` waits at most
    ``timeout_s`` (past it: ``UNAVAILABLE``, as a call past its deadline) and raises
    :class:`~edgespec.runtime.edge.reconnect.Cancelled` once ``cancel`` is set (closing the
    session, which the server may have opened, without waiting for that close)."""

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None: ...


@runtime_checkable
class BoundedVerify(Protocol):
    """A verifier whose verify call can wait for its answer less than its request timeout,
    and be cut short by a cancel event: ``verify_within(call, timeout_s, cancel)`` waits at
    most ``timeout_s`` (and at most the request timeout; past it ``UNAVAILABLE``, a call
    past its deadline) and raises :class:`~edgespec.runtime.edge.reconnect.Cancelled` once
    ``cancel`` is set (a server that stalls keeps no client that left waiting)."""

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply: ...


def open_bounded(
    verifier: Verifier, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
) -> None:
    """Open ``spec`` within ``timeout_s``, cut short once ``cancel`` is set, when
    ``verifier`` can (:class:`BoundedOpen`); else (an in-process verifier, which answers at
    once) its plain ``open``."""
    if isinstance(verifier, BoundedOpen):
        verifier.open_within(spec, timeout_s, cancel)
    else:
        verifier.open(spec)


def verify_bounded(
    verifier: Verifies, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
) -> VerifyReply:
    """``call`` verified within ``timeout_s`` (none left: past its deadline at once), cut
    short once ``cancel`` is set, when ``verifier`` can (:class:`BoundedVerify`); else its
    plain ``verify``."""
    if isinstance(verifier, BoundedVerify):
        return verifier.verify_within(call, max(timeout_s, 0.0), cancel)
    return verifier.verify(call)
