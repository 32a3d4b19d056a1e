"""The edge drafter's configuration (``edgespec draft``, its OpenAI endpoint, the load
generator's clients): :class:`DrafterConfig`, validated once at construction."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Literal

from edgespec.config import ConfigError, PolicySpec
from edgespec.core.link_delay import link_setting_problem
from edgespec.core.tree import parse_branching
from edgespec.core.types import SEED_LIMIT
from edgespec.errors import did_you_mean
from edgespec.policies.registry import ROUTING
from edgespec.policies.semantic.agreement import (
    BUNDLED_DRAFT_PREFIX,
    load_agreement,
    shipped_default,
)
from edgespec.policies.semantic.head import THRESHOLD_STEPS

if TYPE_CHECKING:
    from edgespec.runtime.edge.semantic import SemanticRequest


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
    slo_class: str = "default"
    client_id: str = "edge-0"
    auth_token: str | None = None
    tls_ca: str | None = None
    request_timeout_s: float = 30.0
    # a request gives up after this many reconnects (or replays) in a row, or seconds,
    # without a committed token (edgespec.runtime.edge.progress)
    max_reconnects: int = 5
    progress_timeout_s: float = 60.0
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
        for name in ("link_rtt_ms", "link_jitter_ms", "link_bandwidth_mbps"):
            value = getattr(self, name)
            problem = None if value is None else link_setting_problem(name, value)
            if problem is not None:
                raise ConfigError(name, problem)
        if self.link_seed is not None and not 0 <= self.link_seed < SEED_LIMIT:
            raise ConfigError("link_seed", f"must be in [0, 2**63), got {self.link_seed}")
        if self.max_message_bytes < 1:
            raise ConfigError("max_message_bytes", f"must be >= 1, got {self.max_message_bytes}")
        if self.max_reconnects < 0:
            raise ConfigError("max_reconnects", f"must be >= 0, got {self.max_reconnects}")
        for name in ("request_timeout_s", "progress_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(name, f"must be a finite number > 0, got {value}")
        if self.max_new_tokens < 1:
            raise ConfigError("max_new_tokens", f"must be >= 1, got {self.max_new_tokens}")
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise ConfigError(
                "temperature", f"must be a finite number >= 0, got {self.temperature}"
            )
        if self.lookup and self.draft == "ngram":
            raise ConfigError("lookup", "needs a neural draft model (ngram is lookup alone)")
        if self.lookup and self.temperature > 0:
            raise ConfigError(
                "lookup", f"drafts greedily: needs temperature 0, got {self.temperature}"
            )
        if self.tree is not None:
            self._validate_tree()
        if self.tree_max_nodes < 1:
            raise ConfigError("tree_max_nodes", f"must be >= 1, got {self.tree_max_nodes}")
        if not 0.0 <= self.tree_min_prob < 1.0:
            raise ConfigError("tree_min_prob", f"must be in [0, 1), got {self.tree_min_prob}")
        for address in self.servers:
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
                raise ConfigError(
                    "server", f"expected host:port with a port in 1..65535, got {address!r}"
                )
        if self.routing.name not in ROUTING:
            raise ConfigError(
                "routing.name",
                f"unknown routing policy {self.routing.name!r}; known: {sorted(ROUTING)}"
                + did_you_mean(self.routing.name, ROUTING),
            )
        self._validate_semantic()

    def _validate_semantic(self) -> None:
        if self.verification != "semantic":
            if self.threshold is not None:
                raise ConfigError("threshold", "is the semantic threshold: needs --verify semantic")
            return
        threshold = self.semantic_threshold
        if threshold is None or not 0 <= threshold <= THRESHOLD_STEPS:
            raise ConfigError(
                "threshold",
                f"semantic verification needs a threshold in 0..{THRESHOLD_STEPS} (--threshold "
                f"T; a mismatch is rejected when the head's p >= T/{THRESHOLD_STEPS}; only the "
                f"bundled {BUNDLED_DRAFT_PREFIX} pair has a shipped default), got {threshold}",
            )
        if self.temperature > 0:
            raise ConfigError(
                "verification",
                f"semantic verification is greedy only: needs temperature 0, got "
                f"{self.temperature}",
            )
        if self.tree is not None:
            raise ConfigError("verification", "semantic verification takes chains, not --tree")
        if self.draft == "ngram":
            raise ConfigError(
                "verification",
                "semantic verification needs a neural draft model, which returns its hidden "
                "states (ngram has none)",
            )
        if not 0.0 <= self.channel_per < 1.0:
            raise ConfigError("channel_per", f"must be in [0, 1), got {self.channel_per}")
        rtt = self.channel_rtt_ms
        if rtt is not None and not (math.isfinite(rtt) and rtt >= 0):
            raise ConfigError("channel_rtt_ms", f"must be a finite number >= 0, got {rtt}")
        try:
            self.semantic_request()
        except ValueError as exc:
            raise ConfigError("channel_uplink_mbps", str(exc)) from None

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
        uplink = self.channel_uplink_mbps or self.link_bandwidth_mbps
        if not uplink:
            raise ValueError(
                "semantic verification reports the device's uplink rate to the server's "
                "decision head: give --channel-uplink-mbps (or an emulated "
                "--link-bandwidth-mbps)"
            )
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
        if self.temperature > 0:
            raise ConfigError(
                "tree", f"trees are verified greedily: needs temperature 0, got {self.temperature}"
            )
