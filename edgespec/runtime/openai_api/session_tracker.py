"""The verifier a request of the endpoint generates with: its server's client (behind the
emulated link, when one is configured) remembering the sessions it opened and has not
closed, so that a request ended early (client gone, stop sequence, error) closes them on
the verification server (:func:`tracked`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from edgespec.runtime.edge.bounded_calls import open_bounded, verify_bounded
from edgespec.runtime.edge.fused_handover import fused_if
from edgespec.runtime.edge.reconnect import close_quietly
from edgespec.runtime.messages import FusedCall, FusedRound, SessionSpec, VerifyCall, VerifyReply


class SessionTracker:
    """A verifier that remembers the sessions it opened and has not closed (``close_all``
    closes them). Any other attribute is ``inner``'s, but the verifier's methods are
    declared here (a Protocol's ``isinstance`` does not see ``__getattr__`` from Python 3.12
    on)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._open: set[str] = set()

    def open(self, spec: SessionSpec) -> None:
        self._inner.open(spec)
        self._open.add(spec.session_id)

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None:
        """The inner verifier's bounded open
        (:func:`~edgespec.runtime.edge.bounded_calls.open_bounded`), remembered once it answers."""
        open_bounded(self._inner, spec, timeout_s, cancel)
        self._open.add(spec.session_id)

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
        self._open.discard(session_id)
        self._inner.close(session_id)

    def close_all(self) -> None:
        for session_id in sorted(self._open):
            self._open.discard(session_id)
            close_quietly(self._inner, session_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class FusedSessionTracker(SessionTracker):
    """A :class:`SessionTracker` of a verifier that runs fused rounds (a ``FusedVerifier``):
    a fused run goes on in a session already open, and opens none."""

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        rounds: Iterator[FusedRound] = self._inner.run_fused(call)
        return rounds


def tracked(inner: Any) -> SessionTracker:
    """``inner``'s :class:`SessionTracker`: a :class:`FusedSessionTracker` when ``inner`` runs
    fused rounds, and only then."""
    return fused_if(inner, SessionTracker, FusedSessionTracker)(inner)
