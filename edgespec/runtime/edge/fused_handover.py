"""The device's side of a fused run: the session handed to the server for fused rounds.

With a server that runs fused rounds (:class:`~edgespec.runtime.edge.rounds.FusedVerifier`:
drafted by its co-located draft, or cloud-only, the target's own next token each round, by
the server's ``--fused-rounds``), a fused decision sends a fused request with the session's
window history (and the window policy's own state for the pair); the server runs fused
rounds back to back, consulting its own window policy after each verdict, and streams each
round's committed tokens (:mod:`edgespec.runtime.server.fused_run`). :func:`fused_handover`
records each as a fused :class:`~edgespec.core.types.RoundRecord` when it arrives, takes
the history and the policy's state back when the run ends, and returns the decision the
server obtained, which the drafter's loop (:func:`edgespec.runtime.edge.drafter.generate`)
continues with (no second consultation).

A verifier wrapped in another (the endpoint's, ``edgespec draft``'s) runs fused rounds when
the one it wraps does, and only then: :func:`fused_if` picks the wrapper's class that
declares ``run_fused``. ``isinstance`` with :class:`FusedVerifier` looks the method up on
the class from Python 3.12 on (``inspect.getattr_static``): a wrapper's ``__getattr__``
does not make it fused there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from edgespec.policies.contracts import policy_name
from edgespec.policies.inputs import WindowHistory
from edgespec.policies.interfaces import WindowDecision, WindowPolicy
from edgespec.runtime.edge.ledger import Ledger
from edgespec.runtime.edge.rounds import (
    FusedVerifier,
    Verifier,
    pair_state,
    restore_pair_state,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, VerifyReply

W = TypeVar("W")


def fused_if(inner: Any, plain: type[W], fused: type[W]) -> type[W]:
    """The class of a wrapper of ``inner``: ``fused`` (it declares ``run_fused``) when
    ``inner`` is a :class:`FusedVerifier`, else ``plain``: a wrapper claims no more than
    the verifier it wraps."""
    return fused if isinstance(inner, FusedVerifier) else plain


def fused_handover(
    verifier: Verifier,
    policy: WindowPolicy,
    ledger: Ledger,
    session_id: str,
    context: tuple[int, ...],
    decision: WindowDecision,
    on_round: Callable[[VerifyReply], None] | None = None,
) -> tuple[WindowDecision | None, bool]:
    """Hand the session to the server for a run of fused rounds; record each round as it
    arrives (and give its reply to ``on_round``, once it is in the ledger). Returns the
    decision for the next round (``None``: ask the device's policy) and whether the
    request finished."""
    if not isinstance(verifier, FusedVerifier):
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"window policy {policy_name(policy)} chose a fused round; verifier "
            f"{type(verifier).__name__} cannot run fused rounds",
        )
    clock = ledger.clock
    start = clock()
    # the policy's own state for this pair goes with the history (PairStateWindow)
    snapshot = ledger.history.snapshot(start, pair_state(policy, ledger.pair))
    call = FusedCall(session_id, len(context), decision.gamma, snapshot)
    end = None
    finished = False
    for index, chunk in enumerate(verifier.run_fused(call)):
        arrived = clock()
        reply = chunk.reply
        # measured: what the server's draft, queue and verify times leave of the interval;
        # the run's first round crossed the uplink, the later ones only the downlink
        network_s = max(arrived - start - chunk.draft_s - reply.queue_s - reply.verify_s, 0.0)
        uplink_s = network_s / 2 if index == 0 else 0.0
        times = (start, arrived, chunk.draft_s, uplink_s, network_s - uplink_s)
        finished = ledger.commit(chunk.gamma, len(chunk.draft_token_ids), reply, times, fused=True)
        if on_round is not None:
            on_round(reply)
        start, end = arrived, chunk.end
    if end is None:
        raise RequestError(
            ErrorCode.INTERNAL, f"the fused run of session {session_id!r} ended without its end"
        )
    ledger.history = WindowHistory.from_snapshot(end.history, clock(), ledger.pair)
    try:
        restore_pair_state(policy, ledger.pair, end.history.window_state)
    except ValueError as exc:
        raise RequestError(
            ErrorCode.INTERNAL,
            f"the fused run of session {session_id!r} returned a window state that window "
            f"policy {policy_name(policy)} refuses: {exc}",
        ) from exc
    return end.next_decision, finished
