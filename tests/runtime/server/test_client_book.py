"""The server's per-client rules on :class:`ClientBook` directly: session quotas counted by
token or by client_id, ownership, queue shares and SLO classes, with exact messages."""

from __future__ import annotations

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.clients import ClientBook
from edgespec.runtime.server.config import ServerConfig


def _spec(session_id: str, client_id: str = "c", slo_class: str = "default") -> SessionSpec:
    return SessionSpec(session_id, client_id, (1, 2), SamplingParams(), slo_class)


def _refused(
    code: ErrorCode, message: str, book: ClientBook, spec: SessionSpec, owner: str | None
) -> None:
    with pytest.raises(RequestError) as info:
        book.check_open(spec, owner)
    assert (info.value.code, info.value.message) == (code, message)


def test_the_quota_counts_sessions_per_client_id_and_frees_on_forget() -> None:
    book = ClientBook(ServerConfig(max_sessions_per_client=2))
    for sid in ("a1", "a2"):
        book.check_open(_spec(sid, "alice"), None)
        book.opened(_spec(sid, "alice"), None)
    book.check_open(_spec("b1", "bob"), None)  # another client is not counted against alice
    _refused(
        ErrorCode.RESOURCE_EXHAUSTED,
        "client_id 'alice' already has 2 open sessions (max_sessions_per_client)",
        book,
        _spec("a3", "alice"),
        None,
    )
    book.forget("a1")
    book.check_open(_spec("a3", "alice"), None)
    book.forget("never-opened")  # forgetting an unknown session is harmless


def test_with_auth_the_token_is_the_identity_not_the_client_id() -> None:
    book = ClientBook(ServerConfig(max_sessions_per_client=1))
    book.opened(_spec("s1", "alice"), "tok-1")
    # the same token under another client_id is the same client ...
    _refused(
        ErrorCode.RESOURCE_EXHAUSTED,
        "this token already has 1 open sessions (max_sessions_per_client)",
        book,
        _spec("s2", "mallory"),
        "tok-1",
    )
    # ... and another token under the same client_id is not
    book.check_open(_spec("s2", "alice"), "tok-2")
    book.check_open(_spec("s2", "alice"), None)  # nor is the bare client_id


def test_ownership_binds_authenticated_callers_only() -> None:
    book = ClientBook(ServerConfig())
    book.opened(_spec("mine"), "tok-1")
    book.check_owner("mine", "tok-1")
    book.check_owner("mine", None)  # without auth there is nobody to check
    book.check_owner("unknown", "tok-2")  # not this check's business: NOT_FOUND later
    with pytest.raises(RequestError) as info:
        book.check_owner("mine", "tok-2")
    assert (info.value.code, info.value.message) == (
        ErrorCode.PERMISSION_DENIED,
        "session 'mine' belongs to another client",
    )
    book.forget("mine")
    book.check_owner("mine", "tok-2")


def test_queue_share_counts_the_clients_queued_verifications() -> None:
    book = ClientBook(ServerConfig(max_queued_per_client=2))
    for sid, client in (("a1", "alice"), ("a2", "alice"), ("b1", "bob")):
        book.opened(_spec(sid, client), None)
    book.check_queue_share("a1", ["a2", "b1", "b1"])  # alice has 1 queued
    with pytest.raises(RequestError) as info:
        book.check_queue_share("a1", ["a1", "b1", "a2"])
    assert (info.value.code, info.value.message) == (
        ErrorCode.RESOURCE_EXHAUSTED,
        "this client already has 2 verifications queued (max_queued_per_client)",
    )
    book.check_queue_share("b1", ["a1", "a2", "b1"])  # bob has 1


def test_slo_classes_are_checked_only_when_configured() -> None:
    ClientBook(ServerConfig()).check_open(_spec("s", slo_class="anything"), None)
    book = ClientBook(ServerConfig(slo_classes={"gold": 0.05, "bronze": None}))
    book.check_open(_spec("s", slo_class="gold"), None)
    _refused(
        ErrorCode.INVALID_ARGUMENT,
        "unknown slo_class 'silver'; this server has ['bronze', 'gold']",
        book,
        _spec("s", slo_class="silver"),
        None,
    )


def test_a_policy_sees_a_tokens_sessions_as_one_client_and_no_secret() -> None:
    """Without auth the ``client_id``; with auth the token, hashed, whatever ``client_id``
    each of its sessions claims (decodes-first's prefill turns, batch groups)."""
    book = ClientBook(ServerConfig())
    book.opened(_spec("n1", "alice"), None)
    book.opened(_spec("a1", "alice"), "alpha-secret")
    book.opened(_spec("a2", "mallory"), "alpha-secret")
    book.opened(_spec("b1", "alice"), "beta-secret")
    label = {sid: book.label(_spec(sid, "claimed")) for sid in ("n1", "a1", "a2", "b1")}
    assert label["n1"] == "alice"
    assert label["a1"] == label["a2"] == "token 3f8ad42d6dc52445"  # the token's SHA-256
    assert label["b1"] not in (label["a1"], "alice")
    book.forget("a1")  # a session the book does not know: its client_id
    assert book.label(_spec("a1", "claimed")) == "claimed"
