"""Plain records exchanged between drafter, server and engine (codec.py maps them to
protobuf). Frozen: they cross thread and process boundaries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import FloatArray, SamplingParams, VerifyResult
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.compact_probs import CompactProbs

PROTOCOL_VERSION = 5
"""Bumped on any incompatible change of edgespec.proto; sessions of another version are refused."""

DRAFT_HIDDEN = "draft_hidden"
"""The :attr:`VerifyCall.payloads` name of the draft's hidden states (semantic
verification: rows × the draft's hidden size, one row per draft position sent)."""


@dataclass(frozen=True, slots=True)
class SemanticSpec:
    """A semantic (lossy, WISV) session's settings, sent when it opens: the threshold T on
    the 0..16 scale (a mismatch is rejected when the decision head's p ≥ T/16) and the
    device's channel, the head's CSI input (uplink rate in bit/s, packet error rate,
    round-trip time in seconds), and the draft's hidden size (the width of the rows it will
    upload; 0: not said). The server checks them when the session opens."""

    threshold: int
    uplink_bps: float
    per: float = 0.0
    rtt_s: float = 0.0
    draft_hidden_size: int = 0


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """What a client asks for when it opens a session. ``return_hidden`` asks for the
    target's last-layer hidden states of the committed positions with every verification
    (for feature drafts, EAGLE-style; see :attr:`VerifyOutcome.target_hidden`).
    ``verification_rule`` names the server's rule for this session
    (:mod:`edgespec.runtime.server.verification`; ``"exact"``, the default, is the lossless one).
    ``semantic``: the settings of the lossy ``"semantic"`` rule (``None`` for any other).
    ``num_prior_output_tokens``: how many of the prompt's last tokens are output its
    generation committed before this session (a reopened session's): the frequency and
    presence penalties count them as output (:mod:`edgespec.core.penalties`)."""

    session_id: str
    client_id: str
    prompt_token_ids: tuple[int, ...]
    sampling: SamplingParams
    slo_class: str = "default"
    return_hidden: bool = False
    verification_rule: str = "exact"
    semantic: SemanticSpec | None = None
    num_prior_output_tokens: int = 0

    @property
    def num_prompt_tokens(self) -> int:
        """The prompt's tokens the generation was given (its prior output excluded)."""
        return len(self.prompt_token_ids) - self.num_prior_output_tokens


@dataclass(frozen=True, slots=True, eq=False)
class VerifyCall:
    """Verify ``draft_token_ids`` after the session's first ``prefix_len`` committed tokens.

    With ``draft_parents`` the tokens are a token tree (:mod:`edgespec.core.tree`), verified
    greedily; ``None`` is a chain. ``draft_probs``: a sampled block's q, K × V rows, or
    the same held as each row's nonzero entries (:class:`CompactProbs`: what the server
    decodes from the wire). ``payloads``: extra named arrays for the session's
    verification rule (e.g. per-token channel state); the exact rule takes none.

    Client-reported timing for the server's deadline rule (:mod:`edgespec.policies.slo`):
    ``draft_s``, the drafting time of this block, and ``network_s``, the client's last
    measured network time (uplink + downlink of its previous round, 0 before its first).

    ``batch_id`` and ``batch_calls``: the calls a client sends together for one of its
    batches carry the same ``batch_id`` and their count; the server holds them until all
    have come (at most ``ServerConfig.group_wait_s`` after the first), so one forward pass
    can take them all (:mod:`edgespec.runtime.server.batch_groups`). ``""`` / 0 or 1: not
    grouped."""

    session_id: str
    prefix_len: int
    draft_token_ids: tuple[int, ...]
    draft_probs: FloatArray | CompactProbs | None = None
    draft_parents: tuple[int, ...] | None = None
    payloads: Mapping[str, FloatArray] = field(default_factory=dict)
    draft_s: float = 0.0
    network_s: float = 0.0
    batch_id: str = ""
    batch_calls: int = 0


@dataclass(frozen=True, slots=True)
class VerifyOutcome:
    """``committed_token_ids`` is ``result.committed_token_ids`` cut at EOS / the token
    budget; ``finished`` says the session is done.

    For a session opened with ``return_hidden``: ``target_hidden`` (rows × hidden_size
    float32) holds the target's last-layer hidden states of the committed positions
    ``target_hidden_start ..`` this verification forwarded that the client lacks: every
    position from 0 in the session's first reply, later from ``prefix_len - 1`` on, and the
    accepted draft tokens (not the newest committed token, which is forwarded next round;
    :mod:`edgespec.runtime.server.returned_hidden`); ``None`` otherwise. (Outcomes compare
    field by field: compare two with ``target_hidden`` arrays by their other fields and
    ``np.allclose``.)

    For a token tree, ``accepted_nodes`` holds the accepted path's node indices (the
    tokens ``result.accepted_token_ids``); ``None`` for a chain. ``accepted_mismatches``
    (semantic sessions): the committed draft tokens that differ from the target's argmax
    (none cut away by an EOS or the token budget). ``logprobs``: one per committed token,
    for a session that asks for them (:attr:`SamplingParams.logprobs
    <edgespec.core.types.SamplingParams.logprobs>`); ``None`` otherwise.
    ``prompt_logprobs``: the first reply of a session that asks for them
    (:attr:`SamplingParams.prompt_logprobs
    <edgespec.core.types.SamplingParams.prompt_logprobs>`), one per prompt token after the
    first; ``None`` in every other reply.
    """

    result: VerifyResult
    committed_token_ids: tuple[int, ...]
    finished: bool
    num_forwarded: int
    target_hidden: FloatArray | None = None
    target_hidden_start: int = 0
    accepted_nodes: tuple[int, ...] | None = None
    hidden_request: tuple[int, ...] | None = None
    accepted_mismatches: int = 0
    logprobs: tuple[TokenLogprobs, ...] | None = None
    prompt_logprobs: tuple[TokenLogprobs, ...] | None = None


@dataclass(frozen=True, slots=True)
class VerifyReply:
    """What the drafter gets back: the outcome, where the server spent the time, and the
    server's queue depth when it sent the reply."""

    outcome: VerifyOutcome
    queue_s: float
    verify_s: float
    batch_size: int
    queue_depth: int = 0


@dataclass(frozen=True, slots=True)
class FusedCall:
    """A device's fused request: its window policy answered ``WindowDecision(gamma,
    fused=True)`` for the session's next round, which continues the session's first
    ``prefix_len`` committed tokens; ``history`` is the session's window history then."""

    session_id: str
    prefix_len: int
    gamma: int
    history: HistorySnapshot


@dataclass(frozen=True, slots=True)
class FusedRunEnd:
    """How a fused run ended: the decision the server's window policy answered for the
    next (distributed) round — ``None`` when the request finished or the server has no
    window policy (the device then consults its own) — and the session's history."""

    next_decision: WindowDecision | None
    history: HistorySnapshot


@dataclass(frozen=True, slots=True)
class FusedRound:
    """One fused round as the server streams it when its verdict is in: the decision's
    ``gamma`` (before capping), the block the server's draft drafted, the server's
    drafting time, and the verification reply. ``end`` is set on a run's last round."""

    gamma: int
    draft_token_ids: tuple[int, ...]
    draft_s: float
    reply: VerifyReply
    end: FusedRunEnd | None = None


@dataclass(frozen=True, slots=True)
class ServerStats:
    """Snapshot for the stats RPC / Prometheus."""

    queue_depth: int
    num_sessions: int
    num_batches: int
    mean_batch_size: float
    max_batch_size: int
    batch_size_histogram: tuple[tuple[int, int], ...]
    num_tokens_forwarded: int
    num_cache_hits: int
    num_cache_misses: int
    cache_hit_ratio: float
    num_evictions: int
    num_reprefills: int
    num_cached_tokens: int
    num_cached_bytes: int
    num_expired_sessions: int
    num_rejected: int
    busy: bool = False
    """A verification pass is running now."""


@dataclass(frozen=True, slots=True)
class ServerHealth:
    """What one ``Health`` reply says: a fact the server does not say (it predates the
    field) is ``None``; ``slo_classes`` is ``None`` too when it admits any class."""

    serving: bool
    vocab_size: int
    target_name: str | None
    max_draft_tokens: int | None
    max_context_tokens: int | None
    slo_classes: frozenset[str] | None
    max_sessions_per_client: int | None
    numerics: str | None = None
    """The target's numerics: ``"exact"`` (``--backend transformers``: batch-invariant
    kernels), ``"lossy"`` (``transformers-lossy``: the library's), ``"llamacpp"``,
    ``"llamacpp-lossy"``."""
    runs_fused_rounds: bool | None = None
    """Whether it runs fused rounds (a co-located ``--draft``, or cloud-only ones)."""
    semantic_head_sha256: str | None = None
    """The SHA-256 (hex) of the decision head it serves semantic verification with
    (``None``: it serves none, or does not say): a drafter's shipped default threshold
    and measured agreement are for one head (:mod:`edgespec.policies.semantic.agreement`)."""
