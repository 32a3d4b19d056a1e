"""The verifier ``edgespec draft`` generates with: its server's client (behind the emulated
link, when one is configured) whose session closes a signal does not cut short
(:func:`closed_whole`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from edgespec.runtime.commands.signals import signals_held
from edgespec.runtime.edge.bounded_calls import open_bounded, verify_bounded
from edgespec.runtime.edge.fused_handover import fused_if
from edgespec.runtime.messages import FusedCall, FusedRound, SessionSpec, VerifyCall, VerifyReply


class ClosedWhole:
    """The verifier ``inner`` whose session closes a signal does not cut short
    (:func:`~.signals.signals_held`, for at most the close's deadline ``close_timeout_s``):
    a Ctrl-C's close, cut by a second one, left the session open on the server until its
    ``session_timeout_s``. Any other attribute is ``inner``'s, but the verifier's methods
    are declared here (a Protocol's ``isinstance`` does not see ``__getattr__`` from Python
    3.12 on)."""

    def __init__(self, inner: Any, close_timeout_s: float) -> None:
        self._inner = inner
        self._close_timeout_s = close_timeout_s

    def open(self, spec: SessionSpec) -> None:
        self._inner.open(spec)

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None:
        """The inner verifier's bounded open
        (:func:`~edgespec.runtime.edge.bounded_calls.open_bounded`)."""
        open_bounded(self._inner, spec, timeout_s, cancel)

    def verify(self, call: VerifyCall) -> VerifyReply:
        reply: VerifyReply = self._inner.verify(call)
        return reply

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply:
        """The inner verifier's bounded verify
        (:func:`~edgespec.runtime.edge.bounded_calls.verify_bounded`)."""
        return verify_bounded(self._inner, call, timeout_s, cancel)

    def close(self, session_id: str) -> None:
        with signals_held("draft", "closing its session on the server", self._close_timeout_s):
            self._inner.close(session_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class FusedClosedWhole(ClosedWhole):
    """A :class:`ClosedWhole` of a verifier that runs fused rounds (a ``FusedVerifier``)."""

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        rounds: Iterator[FusedRound] = self._inner.run_fused(call)
        return rounds


def closed_whole(inner: Any, close_timeout_s: float) -> ClosedWhole:
    """``inner``'s :class:`ClosedWhole`: a :class:`FusedClosedWhole` when ``inner`` runs
    fused rounds, and only then."""
    return fused_if(inner, ClosedWhole, FusedClosedWhole)(inner, close_timeout_s)
