"""One round of speculative decoding, in pieces every round loop shares: the edge
drafter's (:func:`edgespec.runtime.edge.drafter.generate`) and the server's fused rounds'
(:func:`edgespec.runtime.server.fused_run.run_fused_rounds`). :func:`decide` consults the
window policy before a round (:func:`pair_state`, :func:`restore_pair_state`: its per-pair
state moved with a fused run), :func:`capped_gamma` caps γ to the tokens still to generate,
:func:`play_round` drafts the block and has it verified. What the device keeps of a
generation, round by round, is :class:`edgespec.runtime.edge.ledger.Ledger`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from edgespec.core.types import SamplingParams
from edgespec.policies.contracts import decide_window
from edgespec.policies.inputs import WindowHistory
from edgespec.policies.interfaces import PairStateWindow, WindowDecision, WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.runtime.backends.base import (
    DraftBackend,
    DraftProposal,
    propose_block,
)
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    FusedCall,
    FusedRound,
    SessionSpec,
    VerifyCall,
    VerifyReply,
)


class Verifies(Protocol):
    """What a round needs of its verifier (:func:`play_round`): the block verified."""

    def verify(self, call: VerifyCall) -> VerifyReply: ...


class Verifier(Verifies, Protocol):
    """Where draft blocks get verified (in-process engine or a remote server)."""

    def open(self, spec: SessionSpec) -> None: ...

    def close(self, session_id: str) -> None: ...


@runtime_checkable
class FusedVerifier(Verifier, Protocol):
    """A verifier whose server also runs fused rounds (co-located drafts, or cloud-only):
    ``run_fused`` streams the fused run's rounds, the last one carrying its end."""

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]: ...


def draft_rng(seed: int | None, *stream: int) -> np.random.Generator:
    """The drafter's random stream: independent of the verifier's, which is seeded with
    the same session seed (sharing one stream would correlate the draft sample with the
    acceptance test and bias the output). ``stream`` names another independent stream of
    the same seed (the server's fused runs use one per run)."""
    return np.random.default_rng(None if seed is None else [seed, 1, *stream])


def decide(policy: WindowPolicy, history: WindowHistory, now_s: float) -> WindowDecision:
    """The policy's checked answer for the next round, from the observation at ``now_s``."""
    return decide_window(policy, history.observation(now_s))


def pair_state(policy: WindowPolicy, pair: str) -> tuple[float, ...]:
    """What a fused handover carries of ``policy``'s state for ``pair`` (``()`` for one
    that keeps none: not a :class:`~edgespec.policies.interfaces.PairStateWindow`)."""
    return policy.pair_state(pair) if isinstance(policy, PairStateWindow) else ()


def restore_pair_state(policy: WindowPolicy, pair: str, state: tuple[float, ...]) -> None:
    """Give ``policy`` the state a handover carried for ``pair`` (nothing for a policy that
    keeps none); ``ValueError`` naming the problem when the state is malformed."""
    if isinstance(policy, PairStateWindow):
        policy.restore_pair_state(pair, state)


def network_time_s(
    reply: VerifyReply, sent_s: float, resent_s: float | None, end_s: float
) -> float:
    """A round's network time (both ways): from its call's sending (``sent_s``) to its
    reply (``end_s``), less the server's queue and verify time. A call sent again
    (``resent_s``: its last sending) whose reply's queue time counts from that resend (the
    resend was admitted anew) counts from it; one whose first sending the server still held
    (its queue counting from then: the rest would be negative) counts from its first."""
    network_s = end_s - sent_s - reply.queue_s - reply.verify_s
    if resent_s is not None:
        resent = end_s - resent_s - reply.queue_s - reply.verify_s
        network_s = resent if resent >= 0 else network_s
    return max(network_s, 0.0)


def capped_gamma(gamma: int, max_new_tokens: int, num_output: int) -> int:
    """At most remaining − 1 drafts (the verifier adds one token), as the simulator does:
    the last token is a plain target step with an empty block (nothing drafted)."""
    return min(gamma, max_new_tokens - num_output - 1)


@dataclass(frozen=True, slots=True)
class PlayedRound:
    """A drafted and verified round: the call sent, the reply, the draft passes run, and
    when drafting started, ended and the reply came back (the caller's clock);
    ``num_exchanges``: verify calls it took (2 for a semantic SH round whose server asked
    for the draft's hidden states; the reply's queue and verify times then add up both)."""

    call: VerifyCall
    reply: VerifyReply
    num_passes: int | None
    start_s: float
    drafted_s: float
    end_s: float
    num_exchanges: int = 1

    @property
    def draft_s(self) -> float:
        return self.drafted_s - self.start_s


def play_round(
    verifier: Verifies,
    drafter: DraftBackend,
    session_id: str,
    context: Sequence[int],
    gamma: int,
    sampling: SamplingParams,
    rng: np.random.Generator,
    network_s: float,
    clock: Callable[[], float],
    stop: DraftStopPolicy | None = None,
    upload: str | None = None,
    shaping: DraftShaping | None = None,
) -> PlayedRound:
    """Draft ``gamma`` (already capped) tokens after ``context`` and verify them;
    ``network_s``: the last measured network time, reported with the call; ``shaping``:
    what the drafter makes of its rows, the request's
    (:func:`~edgespec.runtime.backends.draft_shaping.draft_shaping`).

    ``upload`` (a semantic session's, :mod:`edgespec.runtime.edge.semantic`): ``"fh"`` sends
    the draft's hidden states of every position with the block; ``"sh"`` sends none, and
    the rows the server asks for in a follow-up call."""
    start = clock()
    proposal = (
        propose_block(drafter, context, gamma, sampling.temperature, rng, stop, shaping)
        if gamma > 0
        else DraftProposal((), None, num_passes=None if stop is None else 0)
    )
    drafted = clock()
    hidden = proposal.hidden
    if upload is not None and proposal.token_ids and hidden is None:
        raise ValueError("semantic verification needs the draft's hidden states; none drafted")
    call = VerifyCall(
        session_id=session_id,
        prefix_len=len(context),
        draft_token_ids=proposal.token_ids,
        draft_probs=None if sampling.greedy else proposal.probs,
        draft_parents=proposal.parents,
        payloads={DRAFT_HIDDEN: hidden} if upload == "fh" and hidden is not None else {},
        draft_s=drafted - start,
        network_s=network_s,
    )
    reply = verifier.verify(call)
    asked = reply.outcome.hidden_request
    if asked is None:
        return PlayedRound(call, reply, proposal.num_passes, start, drafted, clock())
    both = _second_exchange(verifier, call, reply, hidden, asked)
    return PlayedRound(call, both, proposal.num_passes, start, drafted, clock(), 2)


def _second_exchange(
    verifier: Verifies,
    call: VerifyCall,
    reply: VerifyReply,
    hidden: npt.NDArray[np.float32] | None,
    asked: tuple[int, ...],
) -> VerifyReply:
    """A semantic SH round's follow-up: the draft's hidden states of the positions the
    server ``asked`` for; the reply adds up both exchanges' queue and verify times."""
    if hidden is None or max(asked, default=0) >= len(hidden):
        raise RequestError(
            ErrorCode.INTERNAL,
            f"the server asked for the draft hidden states of positions {list(asked)}, "
            f"which this round did not draft",
        )
    followup = dataclasses.replace(call, payloads={DRAFT_HIDDEN: hidden[list(asked)]})
    second = verifier.verify(followup)
    if second.outcome.hidden_request is not None:
        raise RequestError(
            ErrorCode.INTERNAL,
            f"the server asked session {call.session_id!r} for hidden states twice",
        )
    return VerifyReply(
        second.outcome,
        reply.queue_s + second.queue_s,
        reply.verify_s + second.verify_s,
        second.batch_size,
        second.queue_depth,
    )
