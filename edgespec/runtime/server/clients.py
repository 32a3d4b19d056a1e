"""Who owns which session, and what each client may hold: the server's per-client rules.

A session belongs to the identity that opened it: its auth token when auth is on (then
only that token may verify or close it), else its self-declared ``client_id`` (which
counts towards quotas but proves nothing). :class:`ClientBook` keeps, per open session,
its owner and identity, and enforces ``max_sessions_per_client``,
``max_queued_per_client`` and the configured SLO classes (deadlines:
:mod:`edgespec.runtime.server.admission`). The client a batching policy sees of a call
(``PendingVerification.client_id``: whose turn a prefill is, whose group a grouped call
joins) is that identity too (:meth:`ClientBook.label`), the token hashed (no secret among a
policy's inputs): with auth on, a token's sessions are one client whatever ``client_id``
each names, so naming several earns no more turns, and naming another's ``client_id``
reaches none of its groups.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.config import ServerConfig


class ClientBook:
    """Per-session owner and identity, with the per-client checks."""

    def __init__(self, config: ServerConfig) -> None:
        self._config = config
        self._owners: dict[str, str | None] = {}  # the token that opened it (None: no auth)
        self._identity: dict[str, str] = {}  # the token, or the client_id without auth
        self._labels: dict[str, str] = {}  # the identity as policies see it (label)

    def check_open(self, spec: SessionSpec, owner: str | None) -> None:
        """The SLO class is known (when classes are configured) and the client has a free
        session slot."""
        classes = self._config.slo_classes
        if classes and spec.slo_class not in classes:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"unknown slo_class {spec.slo_class!r}; this server has {sorted(classes)}",
            )
        identity = _identity(spec, owner)
        quota = self._config.max_sessions_per_client
        if sum(1 for i in self._identity.values() if i == identity) >= quota:
            who = "this token" if owner is not None else identity
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"{who} already has {quota} open sessions (max_sessions_per_client)",
            )

    def opened(self, spec: SessionSpec, owner: str | None) -> None:
        self._owners[spec.session_id] = owner
        self._identity[spec.session_id] = _identity(spec, owner)
        self._labels[spec.session_id] = spec.client_id if owner is None else token_label(owner)

    def forget(self, session_id: str) -> None:
        for table in (self._owners, self._identity, self._labels):
            table.pop(session_id, None)

    def label(self, spec: SessionSpec) -> str:
        """The client of the session ``spec`` as a policy sees it: its ``client_id`` without
        auth (or opened on the engine directly, not through the book), else its token's
        :func:`token_label`."""
        return self._labels.get(spec.session_id, spec.client_id)

    def owns(self, session_id: str, owner: str | None) -> bool:
        """``owner`` opened the open session ``session_id``."""
        return session_id in self._owners and self._owners[session_id] == owner

    def check_owner(self, session_id: str, owner: str | None) -> None:
        """``PERMISSION_DENIED`` when an authenticated caller touches another's session."""
        if owner is not None and self._owners.get(session_id, owner) != owner:
            raise RequestError(
                ErrorCode.PERMISSION_DENIED, f"session {session_id!r} belongs to another client"
            )

    def check_queue_share(self, session_id: str, queued_sessions: Iterable[str]) -> None:
        """The session's client has fewer than ``max_queued_per_client`` verifications in
        ``queued_sessions`` (the sessions of the queued verifications)."""
        identity = self._identity.get(session_id)
        queued = sum(1 for sid in queued_sessions if self._identity.get(sid) == identity)
        if queued >= self._config.max_queued_per_client:
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"this client already has {queued} verifications queued (max_queued_per_client)",
            )


def token_label(owner: str) -> str:
    """An auth token as a policy's inputs may name it: ``token`` and 16 hex digits of its
    SHA-256 (the secret itself never leaves the server's own tables)."""
    return f"token {hashlib.sha256(owner.encode()).hexdigest()[:16]}"


def _identity(spec: SessionSpec, owner: str | None) -> str:
    return owner if owner is not None else f"client_id {spec.client_id!r}"
