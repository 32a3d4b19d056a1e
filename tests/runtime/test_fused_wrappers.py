"""The verifier wrappers of the endpoint (``Watched``, the session tracker) and of ``edgespec
draft`` (``ClosedWhole``) are fused verifiers exactly when the verifier they wrap is. From
Python 3.12 on, ``isinstance`` with a runtime-checkable Protocol looks its members up with
``inspect.getattr_static``, which does not see ``__getattr__``: the endpoint's wrappers
passed ``run_fused`` through ``__getattr__`` only, so there a request whose window picked a
fused round was refused (``cannot run fused rounds``); ``ClosedWhole`` declared it over any
verifier, one that cannot run fused rounds too. :func:`fused_as_3_12_sees_it` is that
lookup, so this fails on Python 3.11 as it would on 3.12."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.runtime.commands.closed_whole import closed_whole
from edgespec.runtime.edge.rounds import FusedVerifier, Verifier, Verifies
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.openai_api.server_watch import ServerWatch
from edgespec.runtime.openai_api.session_tracker import tracked
from edgespec.runtime.wire.emulated_link import wrap_verifier
from edgespec.runtime.wire.grpc_client import RemoteVerifier

MEMBERS = sorted(
    name
    for cls in (FusedVerifier, Verifier, Verifies)
    for name in vars(cls)
    if not name.startswith("_") and callable(vars(cls)[name])
)


def fused_as_3_12_sees_it(verifier: Any) -> bool:
    """``isinstance(verifier, FusedVerifier)`` as Python 3.12 decides it: every member of the
    Protocol found by ``inspect.getattr_static`` (never through ``__getattr__``)."""
    for name in MEMBERS:
        try:
            inspect.getattr_static(verifier, name)
        except AttributeError:
            return False
    return True


class Plain:
    """A verifier that cannot run fused rounds (an in-process one, a test's fake)."""

    def open(self, spec: SessionSpec) -> None: ...

    def verify(self, call: VerifyCall) -> VerifyReply:
        raise AssertionError("not called")

    def close(self, session_id: str) -> None: ...


def _watched(inner: Any) -> Any:
    return ServerWatch(("127.0.0.1:1",)).watched((inner,))[0]


WRAPPERS: dict[str, Callable[[Any], Any]] = {
    "Watched": _watched,
    "SessionTracker": tracked,
    "ClosedWhole": lambda inner: closed_whole(inner, 1.0),
    # the endpoint's chain, as run_request builds it (no emulated link)
    "SessionTracker(Watched)": lambda inner: tracked(_watched(inner)),
}


def test_the_protocol_s_members_are_the_verifier_s_and_run_fused() -> None:
    assert MEMBERS == ["close", "open", "run_fused", "verify"]


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_a_wrapper_of_a_fused_verifier_is_fused_as_3_12_sees_it(name: str) -> None:
    client = RemoteVerifier("127.0.0.1:1")  # a channel connects on its first call
    try:
        wrapper = WRAPPERS[name](client)
        assert fused_as_3_12_sees_it(wrapper)
        assert isinstance(wrapper, FusedVerifier)
    finally:
        client.close_channel()


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_a_wrapper_of_a_verifier_that_cannot_run_fused_rounds_is_not_fused(name: str) -> None:
    wrapper = WRAPPERS[name](Plain())
    assert not fused_as_3_12_sees_it(wrapper)
    assert not isinstance(wrapper, FusedVerifier)


def test_the_emulated_link_keeps_its_own_fused_refusal() -> None:
    """``EmulatedLinkVerifier`` declares ``run_fused`` over any verifier and refuses the run
    itself, naming the verifier it wraps: the wrappers over it are fused, and a fused round
    is refused as before."""

    class Config:
        link_rtt_ms, link_jitter_ms, link_bandwidth_mbps, link_seed = 10.0, 0.0, None, 0
        link_draft_probs = "dense"

    wrapper = tracked(wrap_verifier(Plain(), Config()))
    assert fused_as_3_12_sees_it(wrapper)
    with pytest.raises(RequestError) as info:
        next(iter(wrapper.run_fused(FusedCall("s", 1, 4, HistorySnapshot()))))
    assert (info.value.code, info.value.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "verifier Plain cannot run fused rounds",
    )
