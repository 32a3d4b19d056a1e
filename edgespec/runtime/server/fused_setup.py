"""What the service sets a fused run up with (``VerificationService.run_fused``): the draft
its rounds run (:func:`fused_draft_factory`), the checks of a request and a fresh draft
(:func:`start_fused_run`), the server's window policy as fused runs use it
(:class:`ServerWindow`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass

from edgespec.config import ConfigError
from edgespec.policies.contracts import PolicyContractError, policy_name
from edgespec.policies.history_snapshot import MAX_HISTORY_COUNT, HistorySnapshot
from edgespec.policies.inputs import WindowHistory
from edgespec.policies.interfaces import WindowDecision, WindowPolicy
from edgespec.runtime.backends.base import DraftBackend, FeatureDraftBackend, hidden_state_drafter
from edgespec.runtime.edge.block_limit import check_window_fits
from edgespec.runtime.edge.rounds import decide, pair_state, restore_pair_state
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, FusedCall, SessionSpec
from edgespec.runtime.server.clients import ClientBook, token_label
from edgespec.runtime.server.cloud_only import NEEDS_DRAFT
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine

DraftFactory = Callable[[], DraftBackend]


@dataclass(frozen=True, slots=True)
class FusedStart:
    """A fused request that passed its checks: its draft backend (``None``: a cloud-only
    run without the draft pass), its session's spec, committed tokens (prompt and output)
    and serial, and whether its rounds are cloud-only (:mod:`.cloud_only`)."""

    drafter: DraftBackend | None
    spec: SessionSpec
    tokens: tuple[int, ...]
    cloud_only: bool = False
    pair: str | None = None
    """The draft–target pair its window state is kept under (:func:`fused_pair`; ``None``:
    the session's ``client_id``)."""
    serial: int | None = None  # its rounds are never a later session's of the id


def fused_draft_factory(
    config: ServerConfig, draft_factory: DraftFactory | None
) -> DraftFactory | None:
    """The draft a fused round runs: the co-located draft (``colocated``), the wasted
    pass's (``cloud_only`` with ``cloud_only_draft_pass``) or none (``cloud_only``). A draft
    pass without a draft is a :class:`ConfigError`."""
    if config.fused_rounds == "colocated":
        return draft_factory
    if not config.cloud_only_draft_pass:
        return None
    if draft_factory is None:
        raise ConfigError("cloud_only_draft_pass", NEEDS_DRAFT)
    return draft_factory


def _check_session_free(
    session_id: str, engine: VerificationEngine, running: Collection[str]
) -> None:
    """A fused run needs the session to itself: none in progress on it, and no block
    awaiting its SH follow-up (a fused round would draft, then be refused: the block waits)."""
    if session_id in running:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"session {session_id!r}: a fused run is already in progress on it; "
            "one fused run per session",
        )
    pending = engine.session_pending(session_id)
    if pending is not None:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"session {session_id!r} awaits the hidden-state follow-up of its block at "
            f"prefix_len {pending.call.prefix_len}: send it (the block again, with payload "
            f"{DRAFT_HIDDEN!r} holding the draft hidden states of positions "
            f"{list(pending.positions)}) before a fused run",
        )


def start_fused_run(
    call: FusedCall,
    owner: str | None,
    engine: VerificationEngine,
    clients: ClientBook,
    max_draft_tokens: int,
    draft_factory: DraftFactory | None,
    cloud_only: bool = False,
    running: Collection[str] = (),
) -> FusedStart:
    """The checks of a fused request (raises :class:`RequestError`); its draft backend
    (from ``draft_factory``, :func:`fused_draft_factory`'s), session spec and tokens.
    ``cloud_only``: its rounds are the target's alone (no draft needed, a lossy session's
    rule has no draft hidden states to read); ``running``: the sessions with a fused run
    in progress (one per session: another is refused before it drafts anything, as is a
    run on a session awaiting its SH follow-up)."""
    if draft_factory is None and not cloud_only:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            "fused rounds need a co-located draft model; this server was started without --draft",
        )
    clients.check_owner(call.session_id, owner)
    _check_session_free(call.session_id, engine, running)
    spec = engine.session_spec(call.session_id)
    tokens = engine.session_tokens(call.session_id)
    if call.prefix_len != len(tokens):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"prefix_len {call.prefix_len} does not match session {call.session_id!r}, "
            f"which has {len(tokens)} committed tokens",
        )
    if not 1 <= call.gamma <= max_draft_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT, f"fused gamma {call.gamma} outside 1..{max_draft_tokens}"
        )
    check_history_room(call.history, spec, len(tokens))
    drafter = None if draft_factory is None else draft_factory()
    rule = engine.session_rule(call.session_id)
    if not rule.lossless and not cloud_only and drafter is not None:
        _check_semantic_drafter(drafter, rule, call.session_id, spec.verification_rule)
    if isinstance(drafter, FeatureDraftBackend) and drafter.wants_target_hidden:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            "this server's draft drafts from target features, which fused rounds do not feed it",
        )
    pair, serial = fused_pair(spec.client_id, owner), engine.session_serial(call.session_id)
    return FusedStart(drafter, spec, tokens, cloud_only, pair, serial)


def check_history_room(history: HistorySnapshot, spec: SessionSpec, num_tokens: int) -> None:
    """``INVALID_ARGUMENT`` naming the count a run could push past
    :data:`~edgespec.policies.history_snapshot.MAX_HISTORY_COUNT`: every round commits at
    least one of the session's remaining tokens, so a run adds at most that many rounds and
    committed tokens (``num_tokens``: the session's committed tokens now, prompt included).
    The first token's age saturates instead (:meth:`WindowHistory.snapshot`)."""
    remaining = spec.sampling.max_new_tokens - (num_tokens - len(spec.prompt_token_ids))
    room = MAX_HISTORY_COUNT - max(remaining, 0)
    for name, value in (
        ("num_rounds", history.num_rounds),
        ("num_committed_total", history.num_committed_total),
    ):
        if value > room:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"history snapshot: {name} must be an integer in [0, {room}] for this run, "
                f"which may add up to {remaining} (one per token the session has left), "
                f"got {value}",
            )


def fused_pair(client_id: str, owner: str | None) -> str:
    """The draft–target pair a fused run's window state is kept under: the session's
    ``client_id`` and, with auth on, its owner (the token, hashed: no secret among a policy's
    keys), so a client cannot reach another token's state by naming its ``client_id``.
    Without auth a ``client_id`` proves nothing, as for the quotas
    (:mod:`edgespec.runtime.server.clients`)."""
    return client_id if owner is None else f"{client_id} ({token_label(owner)})"


def _check_semantic_drafter(
    drafter: DraftBackend, rule: object, session_id: str, rule_name: str
) -> None:
    """A lossy session's fused rounds are verified by its own rule: a semantic rule reads
    the co-located draft's hidden states (uploaded FH-style, without a network), so that
    draft must return them at the width the session's decision head takes."""
    head = getattr(rule, "head", None)
    if head is None:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"session {session_id!r} uses the lossy verification rule {rule_name!r}, "
            "which fused rounds cannot feed",
        )
    try:
        width = hidden_state_drafter(drafter).return_hidden(False)
    except ValueError as exc:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"fused rounds of semantic session {session_id!r} need the server's draft's "
            f"hidden states: {exc}",
        ) from exc
    if width != head.draft_hidden:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION,
            f"fused rounds of semantic session {session_id!r}: the server's draft has hidden "
            f"size {width}, the decision head takes draft hidden states of width "
            f"{head.draft_hidden}",
        )


class ServerWindow:
    """The server's window policy as fused runs use it: one object for every session,
    called under a lock (runs call it from worker threads). Per run: :meth:`restore` the
    pair's state the device handed over, :meth:`decide` after each verdict, :meth:`state`
    to hand it back, :meth:`release` when the run ends however it ends. A policy that
    raises or breaks its contract fails that run with ``INTERNAL``; a state it refuses
    fails it with ``INVALID_ARGUMENT``.

    The device owns a pair's state between runs (it hands it over at each run's start), so
    the server forgets a pair when its last running fused run releases it: what the policy
    keeps is bounded by the runs in flight, not by every ``client_id`` a client ever named.
    """

    __slots__ = ("_lock", "_policy", "_running")

    def __init__(self, policy: WindowPolicy, max_draft_tokens: int) -> None:
        """A ``policy`` whose rounds may decide a block over ``max_draft_tokens`` is a
        ``ConfigError``: every fused run, or a device's next round, would be refused."""
        check_window_fits(policy, False, max_draft_tokens)
        self._policy = policy
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}  # pair -> fused runs holding its state

    def restore(self, pair: str, state: tuple[float, ...]) -> None:
        """``pair``'s state as the device handed it over; once restored, the run holds the
        pair until it calls :meth:`release` (a refused state holds nothing)."""
        with self._lock:
            try:
                restore_pair_state(self._policy, pair, state)
            except ValueError as exc:
                raise RequestError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"history snapshot: window_state refused by window policy "
                    f"{policy_name(self._policy)}: {exc}",
                ) from exc
            self._running[pair] = self._running.get(pair, 0) + 1

    def release(self, pair: str, hand_back: bool = True) -> tuple[float, ...]:
        """A run that :meth:`restore` d ``pair`` ends: ``pair``'s state now (what the run
        hands back; ``()`` without ``hand_back``), and the last run out resets the pair
        (``()``: the policy drops what it kept for it) — before the device hears the run's
        end, so a device that shares this policy object (in-process) restores its state
        after the reset, not before. The run's hold ends even when the policy raises."""
        with self._lock:
            try:
                return pair_state(self._policy, pair) if hand_back else ()
            finally:
                left = self._running.get(pair, 0) - 1
                if left > 0:
                    self._running[pair] = left
                else:
                    self._running.pop(pair, None)
                    restore_pair_state(self._policy, pair, ())

    @property
    def num_pairs_held(self) -> int:
        """Pairs some running fused run holds (their state kept by the policy)."""
        with self._lock:
            return len(self._running)

    def decide(self, history: WindowHistory, now_s: float) -> WindowDecision:
        policy = self._policy
        with self._lock:
            try:  # (a policy that raises is one too: decide_window says so)
                return decide(policy, history, now_s)
            except PolicyContractError as exc:
                raise RequestError(ErrorCode.INTERNAL, str(exc)) from exc

    def state(self, pair: str) -> tuple[float, ...]:
        with self._lock:
            return pair_state(self._policy, pair)

    def hold(self, pair: str, state: tuple[float, ...]) -> PairHold:
        """:meth:`restore`, and the run's hold on ``pair`` (released once)."""
        self.restore(pair, state)
        return PairHold(self, pair)


class PairHold:
    """One fused run's hold on its pair in the server's window: :meth:`decide` per verdict,
    :meth:`hand_back` for the run's last round (the state it carries back), :meth:`close`
    when the run ends however it ends (a no-op after :meth:`hand_back`)."""

    __slots__ = ("_held", "pair", "window")

    def __init__(self, window: ServerWindow, pair: str) -> None:
        self.window = window
        self.pair = pair
        self._held = True

    def decide(self, history: WindowHistory, now_s: float) -> WindowDecision:
        return self.window.decide(history, now_s)

    def hand_back(self) -> tuple[float, ...]:
        """The pair's state to hand back; the hold is released (:meth:`ServerWindow.release`)."""
        self._held = False
        return self.window.release(self.pair)

    def close(self) -> None:
        """The run ended without :meth:`hand_back` (it failed): the hold ends; a policy
        that raises while it forgets the pair does not hide the run's own error."""
        if self._held:
            self._held = False
            with contextlib.suppress(Exception):
                self.window.release(self.pair, hand_back=False)
