"""Frozen records that cross module boundaries (simulator, server, drafter, policies).

Conventions: times are seconds (``_s``) unless the name says otherwise, sizes are
``num_`` counts or ``_bytes``; token ids are plain ``int``. Arrays (probabilities, hidden
states) are numpy arrays owned by the record: callers must not mutate them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

# a request's sampling is one of these records; it lives beside its checks
from edgespec.core.sampling_params import SamplingParams as SamplingParams

FloatArray = npt.NDArray[np.float32] | npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Request:
    """One generation request as it arrives at the system.

    ``num_output_tokens`` is the length the target will produce (known to a simulator
    from a trace; an upper bound for the real runtime).
    """

    request_id: str
    client_id: str
    arrival_s: float
    num_prompt_tokens: int
    num_output_tokens: int
    slo_class: str = "default"
    prompt_token_ids: tuple[int, ...] = ()
    sampling: SamplingParams = field(default_factory=SamplingParams)


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """Outcome of verifying one draft block of K tokens.

    ``num_accepted`` is L (0..K), the length of the accepted draft prefix.
    ``first_rejection`` is R, the index in the block of the first rejected draft token,
    or ``None`` when all K were accepted (then L == K).
    ``extra_token`` is the target's own token at position L: the correction that
    replaces the rejected draft token, or the bonus token when all K were accepted.
    Every round therefore commits L + 1 tokens.
    """

    num_drafted: int
    num_accepted: int
    first_rejection: int | None
    extra_token: int
    accepted_token_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        if not 0 <= self.num_accepted <= self.num_drafted:
            raise ValueError(f"num_accepted={self.num_accepted} outside 0..{self.num_drafted}")
        if len(self.accepted_token_ids) != self.num_accepted:
            raise ValueError("accepted_token_ids must hold exactly num_accepted tokens")
        expected_r = None if self.num_accepted == self.num_drafted else self.num_accepted
        if self.first_rejection != expected_r:
            raise ValueError(f"first_rejection must be {expected_r}, got {self.first_rejection}")

    @property
    def all_accepted(self) -> bool:
        return self.first_rejection is None

    @property
    def committed_token_ids(self) -> tuple[int, ...]:
        return (*self.accepted_token_ids, self.extra_token)

    @property
    def num_committed(self) -> int:
        return self.num_accepted + 1

    @property
    def num_wasted(self) -> int:
        """Draft tokens computed and sent but thrown away."""
        return self.num_drafted - self.num_accepted


@dataclass(frozen=True, slots=True)
class PendingVerification:
    """What a batching policy sees of one queued verification request.

    ``client_id``: whose request it is (a real server with auth on names the token, hashed:
    a token's sessions are one client whatever ``client_id`` each claims).
    ``num_new_tokens`` is the number of positions the target must forward for this
    entry: the draft tokens plus any uncached prefix (a cold start forwards the whole
    prefix). ``num_cached_tokens`` is the prefix already in the server's KV cache.
    ``deadline_s``: when its batch must have finished to keep the session's SLO class
    (:mod:`edgespec.policies.slo`; ``None``: no target). ``expected_accepted``: N̂ᵛ = α̂·N_d,
    the draft tokens the session is expected to get accepted this round (``None``: unknown).
    """

    entry_id: int
    session_id: str
    client_id: str
    enqueued_s: float
    num_draft_tokens: int
    num_new_tokens: int
    num_cached_tokens: int
    slo_class: str = "default"
    deadline_s: float | None = None
    expected_accepted: float | None = None

    @property
    def num_context_tokens(self) -> int:
        return self.num_cached_tokens + self.num_new_tokens


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """A batching decision: the ``entry_id`` s to verify together now, in order.

    An empty plan means "wait": nothing is dispatched until the next event.
    """

    entry_ids: tuple[int, ...]
    reason: str = ""

    @property
    def size(self) -> int:
        return len(self.entry_ids)


@dataclass(frozen=True, slots=True)
class ServerLoad:
    """What a routing policy sees of one target server."""

    server_id: int
    queue_depth: int
    num_active_sessions: int
    busy: bool = False


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """Timing and outcome of one draft→verify round; emitted by simulator and drafter alike.

    Time split: draft on the device, uplink, waiting in the server queue, the target's
    verification forward, downlink. ``end_s - start_s`` is the round's wall time.
    ``deadline_s``: the verification's deadline (:mod:`edgespec.policies.slo`), ``None``
    without an SLO target; the round *violated* it when
    :attr:`server_done_s` (its verification's end) is later.
    """

    request_id: str
    round_index: int
    start_s: float
    end_s: float
    draft_s: float
    uplink_s: float
    queue_s: float
    verify_s: float
    downlink_s: float
    num_drafted: int
    num_accepted: int
    num_committed: int
    batch_size: int
    server_id: int = 0
    deadline_s: float | None = None
    num_draft_passes: int | None = None
    """Draft forward passes run for the round; ``None`` means ``num_drafted``. A stop
    predictor (:mod:`edgespec.policies.stop_drafting`) that ends a block early runs one
    more pass than it sends: the token it stopped on."""
    fused: bool = False
    """The round ran fused: drafted by the server's co-located draft (in the real runtime
    ``draft_s`` is the server's drafting time, as its stream reports it). In the simulator its
    ``draft_s`` is then the draft part of the batch step that verified it (after its
    ``queue_s``; ``verify_s`` is the rest of the step), ``uplink_s`` is the fused request's
    (first round of a fused run, else 0) and ``end_s`` is when its tokens reached the
    device."""

    @property
    def draft_passes(self) -> int:
        return self.num_drafted if self.num_draft_passes is None else self.num_draft_passes

    @property
    def server_done_s(self) -> float:
        """When the round's verification finished on the server."""
        return self.start_s + self.draft_s + self.uplink_s + self.queue_s + self.verify_s


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One verification forward pass on a server: when, how big, how many tokens."""

    server_id: int
    start_s: float
    end_s: float
    batch_size: int
    num_new_tokens: int
    num_cached_tokens: int


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """Outcome of one request, emitted by simulator and runtime alike (DESIGN.md metrics).

    ``first_token_s`` is when the first committed output token reached the user;
    ``finish_s`` when the last did. ``slo_tokens_per_s`` is the class's token-speed
    target (WISP), ``None`` when the class has none. The ``*_s`` totals split the
    request's time across its rounds. ``device_wait_s``: how long the request waited,
    after ``arrival_s``, for its device to finish earlier requests (a device serves one
    request at a time); TTFT and E2E count it, :attr:`service_ttft_s` does not.
    """

    request_id: str
    client_id: str
    slo_class: str
    server_id: int
    arrival_s: float
    first_token_s: float
    finish_s: float
    num_prompt_tokens: int
    num_output_tokens: int
    num_rounds: int
    num_drafted: int
    num_accepted: int
    slo_tokens_per_s: float | None = None
    draft_s: float = 0.0
    network_s: float = 0.0
    queue_s: float = 0.0
    verify_s: float = 0.0
    device_wait_s: float = 0.0

    @property
    def ttft_s(self) -> float:
        return self.first_token_s - self.arrival_s

    @property
    def service_ttft_s(self) -> float:
        """TTFT from when the device started the request (``arrival_s`` +
        ``device_wait_s``): DSD-Sim's TTFT, which starts the clock when the drafter takes
        the request up."""
        return self.ttft_s - self.device_wait_s

    @property
    def e2e_s(self) -> float:
        return self.finish_s - self.arrival_s

    @property
    def tpot_s(self) -> float:
        """Mean time per output token after the first (0 for one-token outputs)."""
        if self.num_output_tokens <= 1:
            return 0.0
        return (self.finish_s - self.first_token_s) / (self.num_output_tokens - 1)

    @property
    def tokens_per_s(self) -> float:
        """Achieved token speed over the whole request, as WISP's SLO classes measure it."""
        return self.num_output_tokens / self.e2e_s if self.e2e_s > 0 else float("inf")

    @property
    def slo_met(self) -> bool | None:
        if self.slo_tokens_per_s is None:
            return None
        return self.tokens_per_s >= self.slo_tokens_per_s
