"""The edge drafter's configuration (``edgespec draft``, its OpenAI endpoint, the load
generator's clients): :class:`DrafterConfig`, validated once at construction."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Literal

from edgespec.config import ConfigError, PolicySpec
from edgespec.core.link_delay import DraftProbsWire, link_setting_problem
from edgespec.core.tree import parse_branching
from edgespec.core.wire_limits import MAX_LOGPROBS, SEED_LIMIT
from edgespec.policies.semantic.agreement import (
    BUNDLED_DRAFT_PREFIX,
    load_agreement,
    shipped_default,
)
from edgespec.policies.semantic.csi import MAX_RTT_S, MIN_UPLINK_BPS
from edgespec.policies.semantic.head import THRESHOLD_STEPS
from edgespec.runtime.edge.config_access import check_server_access
from edgespec.runtime.edge.config_sampling import (
    check_logit_bias,
    check_penalties,
    check_sampling,
    check_stops,
)
from edgespec.runtime.edge.session_ids import config_client_id_problem
from edgespec.server_access_types import auth_token_problem

if TYPE_CHECKING:
    from edgespec.runtime.edge.semantic import SemanticRequest

MAX_MESSAGE_BYTES = 2**31 - 1
"""The largest ``max_message_bytes`` (server and drafter): gRPC takes its message limits
as a C int, and a larger one makes building the server or channel raise OverflowError."""

MAX_REQUEST_TIMEOUT_S = 86_400.0
"""The longest ``request_timeout_s`` (a day, as ``edgespec drafting-server --timeout-s``):
gRPC's deadline is now + timeout in int64 nanoseconds, so from about 7.4e9 s on every call
failed at once with DEADLINE_EXCEEDED, and a drafter retried until it gave up."""

MAX_UPLINK_MBPS = 1e9
"""The fastest uplink reported to the decision head (1 Pbit/s, beyond any link): its bit/s
stay finite (1e308 Mbit/s overflowed to an uplink of inf bit/s)."""


@dataclasses.dataclass(frozen=True, slots=True)
class DrafterConfig:
    """An edge drafter client (``edgespec draft``). ``server``: one ``host:port`` or
    several, comma-separated; with several, ``routing`` picks one per request from their
    live loads."""

    server: str = "127.0.0.1:50051"
    routing: PolicySpec = dataclasses.field(default_factory=lambda: PolicySpec("jsq"))
    draft: str = "ngram"
    window: PolicySpec = dataclasses.field(default_factory=lambda: PolicySpec("static"))
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0  # nucleus sampling: the most likely tokens holding this mass
    top_k: int = 0  # sample among the top_k most likely tokens (0: all; cut before top_p)
    min_p: float = 0.0  # ... at least min_p times as likely as the likeliest (0: no cut)
    ignore_eos: bool = False  # generate max_new_tokens past any EOS (fixed lengths)
    # penalties on the target's logits, greedy too (edgespec.core.penalties): 1 / 0 = off
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    # end at these token ids as at an EOS; no EOS or stop id before min_tokens tokens
    stop_token_ids: tuple[int, ...] = ()
    min_tokens: int = 0
    # cut the text before the first of these strings and end there (the OpenAI `stop`;
    # the device's: it needs a tokenizer, and the server commits up to a round past it)
    stop: tuple[str, ...] = ()
    # (token id, bias) pairs added to the target's logits before anything else, greedy too
    logit_bias: tuple[tuple[int, float], ...] = ()
    # each output token's log-probability under the target and this many likeliest others'
    # (0..20; None: none), returned with a distributed run's verifications
    logprobs: int | None = None
    slo_class: str = "default"
    client_id: str = "edge-0"
    auth_token: str | None = None
    tls_ca: str | None = None
    # the name the servers' TLS certificates hold, when their addresses are not it (an IP)
    tls_server_name: str | None = None
    request_timeout_s: float = 30.0
    # a request gives up after this many reconnects (or replays) in a row, or seconds,
    # without a committed token (edgespec.runtime.edge.progress)
    max_reconnects: int = 5
    progress_timeout_s: float = 60.0
    # how long a lost session is reopened while the server is unreachable; a new request's
    # routing across several servers and its first open share it (edgespec draft's first
    # open against one server fails at once)
    retry_timeout_s: float = 30.0
    # the client's gRPC send/receive limit per message (the server has its own): raise both
    # for hidden-state drafts with long prompts (docs/RUNTIME.md)
    max_message_bytes: int = 4 << 20
    lookup: bool = False  # prompt lookup first, the neural draft where it finds nothing
    tree: str | None = None  # token-tree branching per depth, e.g. "2,2,1,1" (greedy only)
    tree_min_prob: float = 0.0  # prune tree candidates below this draft path probability
    tree_max_nodes: int = 24  # tokens per tree at most (keep <= the server's max_draft_tokens)
    # emulated link on the drafter's transport (edgespec.runtime.wire.emulated_link): added RTT,
    # mean exponential jitter per message, bandwidth (null/0: unlimited); all 0 = off
    link_rtt_ms: float = 0.0
    link_jitter_ms: float = 0.0
    link_bandwidth_mbps: float | None = None
    link_seed: int | None = None  # seed of the jitter draws (None: fresh entropy)
    # a sampled block's q counted as the papers' dense fp16 rows or as gRPC's compact ones
    link_draft_probs: DraftProbsWire = "dense"
    # verification rule: "exact" (lossless) or "semantic" (lossy, WISV; greedy neural chain
    # drafts, a server with --semantic-head): its threshold T (0..16; required, except with
    # the bundled gemma3-270m pair's draft, which gets the shipped default), upload
    # protocol (fh, sh, or auto: FH when the handshake RTT is above 10 ms) and the channel
    # reported to the decision head (uplink default: link_bandwidth_mbps; RTT default:
    # link_rtt_ms, else 0)
    verification: Literal["exact", "semantic"] = "exact"
    threshold: int | None = None
    upload: Literal["fh", "sh", "auto"] = "auto"
    channel_uplink_mbps: float | None = None
    channel_per: float = 0.0
    channel_rtt_ms: float | None = None

    def validate(self) -> None:
        if self.auth_token is not None and (problem := auth_token_problem(self.auth_token)):
            raise ConfigError("auth_token", problem)
        for name in ("link_rtt_ms", "link_jitter_ms", "link_bandwidth_mbps"):
            value = getattr(self, name)
            problem = None if value is None else link_setting_problem(name, value)
            if problem is not None:
                raise ConfigError(name, problem)
        if self.link_seed is not None and not 0 <= self.link_seed < SEED_LIMIT:
            raise ConfigError("link_seed", f"must be in [0, 2**63), got {self.link_seed}")
        if not 1 <= self.max_message_bytes <= MAX_MESSAGE_BYTES:
            raise ConfigError(
                "max_message_bytes",
                f"must be in 1..{MAX_MESSAGE_BYTES:,} (gRPC takes it as a C int), got "
                f"{self.max_message_bytes}",
            )
        if self.max_reconnects < 0:
            raise ConfigError("max_reconnects", f"must be >= 0, got {self.max_reconnects}")
        for name in ("request_timeout_s", "progress_timeout_s", "retry_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(name, f"must be a finite number > 0, got {value}")
        if self.request_timeout_s > MAX_REQUEST_TIMEOUT_S:
            raise ConfigError(
                "request_timeout_s",
                f"must be at most {MAX_REQUEST_TIMEOUT_S:,.0f} s (a day), got "
                f"{self.request_timeout_s:g}",
            )
        check_sampling(self.max_new_tokens, self.temperature, self.top_p, self.top_k, self.min_p)
        check_penalties(self.repetition_penalty, self.frequency_penalty, self.presence_penalty)
        check_stops(self.stop_token_ids, self.min_tokens, self.max_new_tokens, self.stop)
        check_logit_bias(self.logit_bias)
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_LOGPROBS:
            raise ConfigError("logprobs", f"must be in [0, {MAX_LOGPROBS}], got {self.logprobs}")
        if (problem := config_client_id_problem(self)) is not None:
            raise ConfigError("client_id", problem)
        if self.lookup and self.draft == "ngram":
            raise ConfigError("lookup", "needs a neural draft model (ngram is lookup alone)")
        if self.tree is not None:
            self._validate_tree()
        if self.tree_max_nodes < 1:
            raise ConfigError("tree_max_nodes", f"must be >= 1, got {self.tree_max_nodes}")
        if not 0.0 <= self.tree_min_prob < 1.0:
            raise ConfigError("tree_min_prob", f"must be in [0, 1), got {self.tree_min_prob}")
        check_server_access(self.servers, self.tls_ca, self.tls_server_name, self.routing.name)
        self._validate_semantic()

    def _validate_semantic(self) -> None:
        """The semantic fields; each error names the other fields as the one at fault was
        given: by their flags when a flag set it (``flag_message``), else as fields."""
        if self.verification != "semantic":
            self._refuse_semantic_fields()
            return
        threshold = self.semantic_threshold
        if threshold is None or not 0 <= threshold <= THRESHOLD_STEPS:
            needs = f"semantic verification needs a threshold in 0..{THRESHOLD_STEPS}"
            rule = (
                f"T; a mismatch is rejected when the head's p >= T/{THRESHOLD_STEPS}; only the "
                f"bundled {BUNDLED_DRAFT_PREFIX} pair has a shipped default), got {threshold}"
            )
            # none given: the error is the semantic verification's, which asks for one
            field = "verification" if self.threshold is None else "threshold"
            raise ConfigError(field, f"{needs} (threshold: {rule}",
                              flag_message=f"{needs} (--threshold {rule}")  # fmt: skip
        if self.temperature > 0:
            raise ConfigError("verification", "semantic verification is greedy only: needs "
                              f"temperature 0, got {self.temperature}")  # fmt: skip
        if self.logprobs is not None:
            raise ConfigError(
                "verification",
                "semantic verification returns no logprobs",
                flag_message="semantic verification returns no --logprobs",
            )
        if self.tree is not None:
            chains = "semantic verification takes chains, not"
            raise ConfigError("verification", f"{chains} a token tree (tree {self.tree})",
                              flag_message=f"{chains} --tree")  # fmt: skip
        if self.draft == "ngram":
            raise ConfigError("verification", "semantic verification needs a neural draft model, "
                              "which returns its hidden states (ngram has none)")  # fmt: skip
        if self.lookup:
            own = (
                "semantic verification judges the draft model's own greedy tokens by its hidden "
                "states (a prompt-lookup token is not one: the head would judge another), not"
            )
            raise ConfigError("verification", f"{own} lookup", flag_message=f"{own} --lookup")
        self._validate_channel()

    def _refuse_semantic_fields(self) -> None:
        """Under exact verification, a semantic field set is an error (it was ignored)."""
        if self.threshold is not None:
            raise _needs_semantic("threshold", "is the semantic threshold")
        if self.upload != "auto":
            raise _needs_semantic("upload", "is how semantic rounds upload hidden states")
        channel = {"channel_uplink_mbps": None, "channel_per": 0.0, "channel_rtt_ms": None}
        for name, default in channel.items():  # reported to the head: semantic only
            if getattr(self, name) != default:
                raise _needs_semantic(name, "is reported to the decision head")

    def _validate_channel(self) -> None:
        """The channel a semantic session reports to the server's decision head."""
        if not 0.0 <= self.channel_per < 1.0:
            raise ConfigError("channel_per", f"must be in [0, 1), got {self.channel_per}")
        rtt = self.channel_rtt_ms
        if rtt is not None and not (math.isfinite(rtt) and rtt >= 0):
            raise ConfigError("channel_rtt_ms", f"must be a finite number >= 0, got {rtt}")
        if rtt is not None and rtt > MAX_RTT_S * 1e3:
            raise ConfigError(
                "channel_rtt_ms",
                f"must be at most {MAX_RTT_S * 1e3:,.0f} ms (the decision head's RTT range), "
                f"got {rtt:g}",
            )
        field = (
            "channel_uplink_mbps" if self.channel_uplink_mbps is not None else "link_bandwidth_mbps"
        )
        uplink = getattr(self, field)  # 0 given is refused, never taken for not given
        if uplink is not None and not MIN_UPLINK_BPS <= uplink * 1e6 <= MAX_UPLINK_MBPS * 1e6:
            raise ConfigError(field, f"must be in [{MIN_UPLINK_BPS / 1e6:g}, {MAX_UPLINK_MBPS:g}] "
                              f"Mbit/s (1 bit/s to 1 Pbit/s) to be reported as the uplink, got "
                              f"{uplink:g}")  # fmt: skip
        try:
            self.semantic_request()
        except ValueError as exc:  # no uplink rate: the semantic verification's error
            flags = _uplink_needed("--channel-uplink-mbps", "--link-bandwidth-mbps")
            raise ConfigError("verification", str(exc), flag_message=flags) from None

    @property
    def semantic_threshold(self) -> int | None:
        """The semantic threshold: ``threshold``, else the bundled pair's shipped default
        for its draft (:func:`~edgespec.policies.semantic.agreement.shipped_default`)."""
        if self.verification != "semantic" or self.threshold is not None:
            return self.threshold
        return shipped_default(self.draft, load_agreement())

    def semantic_request(self) -> SemanticRequest | None:
        """The semantic session this config asks for (``None`` for exact verification);
        ``ValueError`` for a channel it cannot report."""
        from edgespec.runtime.edge.semantic import SemanticRequest

        threshold = self.semantic_threshold
        if self.verification != "semantic" or threshold is None:
            return None
        uplink = (
            self.link_bandwidth_mbps
            if self.channel_uplink_mbps is None
            else self.channel_uplink_mbps
        )
        if uplink is None:
            raise ValueError(_uplink_needed("channel_uplink_mbps", "link_bandwidth_mbps"))
        rtt_ms = self.channel_rtt_ms if self.channel_rtt_ms is not None else self.link_rtt_ms
        return SemanticRequest(threshold, uplink * 1e6, self.channel_per, rtt_ms / 1e3, self.upload)

    @property
    def servers(self) -> tuple[str, ...]:
        """The addresses in ``server``."""
        return tuple(a.strip() for a in self.server.split(","))

    def _validate_tree(self) -> None:
        try:
            parse_branching(self.tree or "")
        except ValueError as exc:
            raise ConfigError("tree", str(exc)) from None
        if self.draft == "ngram":
            raise ConfigError("tree", "needs a neural draft model (ngram drafts chains)")


def _needs_semantic(field: str, what: str) -> ConfigError:
    """``field`` (``what`` it is) set under exact verification: it needs ``verification``
    semantic, named as a field, or as the flag ``--verify`` when a flag set ``field``."""
    return ConfigError(field, f"{what}: needs verification semantic",
                       flag_message=f"{what}: needs --verify semantic")  # fmt: skip


def _uplink_needed(channel: str, link: str) -> str:
    """Semantic verification without an uplink rate to report: give ``channel`` or ``link``
    (the fields' or the flags' names)."""
    return (f"semantic verification reports the device's uplink rate to the server's decision "
            f"head: give {channel} (or an emulated {link})")  # fmt: skip
