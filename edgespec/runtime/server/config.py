"""The runtime's configs: the verification server's (``edgespec serve``) and an edge
drafter's (``edgespec draft``), loaded through :mod:`edgespec.config`."""

from __future__ import annotations

import dataclasses
import math
import os
import ssl
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from edgespec.config import ConfigError, PolicySpec
from edgespec.core.tree import parse_branching
from edgespec.errors import did_you_mean
from edgespec.policies.registry import BATCHING, ROUTING
from edgespec.policies.semantic.head import THRESHOLD_STEPS
from edgespec.policies.slo import DeadlineRule

if TYPE_CHECKING:
    from edgespec.runtime.edge.semantic import SemanticRequest


@dataclasses.dataclass(frozen=True, slots=True)
class ServerConfig:
    """The verification server (``edgespec serve``)."""

    target: str = ""
    host: str = "127.0.0.1"
    port: int = 50051
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    batching: PolicySpec = dataclasses.field(default_factory=lambda: PolicySpec("fcfs"))
    max_batch_size: int = 16
    max_batch_tokens: int = 4096
    kv_budget_tokens: int = 65536
    max_sessions: int = 256
    # per client (its auth token, or its client_id without auth); a session has at most one
    # verification queued, so this bounds a client's queued verifications too
    max_sessions_per_client: int = 64
    max_queued_per_client: int = 64  # verifications waiting in the queue, per client
    max_queue_depth: int = 1024
    max_draft_tokens: int = 32
    max_message_bytes: int = 4 << 20
    session_timeout_s: float = 300.0
    auth_tokens: tuple[str, ...] = ()
    tls_cert: str | None = None
    tls_key: str | None = None
    prometheus_port: int | None = None
    health_requires_auth: bool = False  # Health reveals vocab size and draft limit
    # SLO class -> token-speed target (tokens/s) or null; a session's queued
    # verifications carry the deadline deadline_rule gives (edgespec.policies.slo), as in
    # the simulator (empty: no deadlines)
    slo_classes: Mapping[str, float | None] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({})
    )
    deadline_rule: DeadlineRule = "pace"
    # False = SLED-style baseline: no KV kept between a session's verifications, every
    # verification forwards the session's whole context
    prefix_cache: bool = True
    # semantic (lossy, WISV) verification: the decision head (JSON, edgespec.policies.
    # semantic.head); without one the server serves "exact" only. semantic_thresholds: the
    # thresholds (0..16) a session may ask for; empty = all
    semantic_head: str | None = None
    semantic_thresholds: tuple[int, ...] = ()
    # how fused rounds run (docs/RUNTIME.md): "colocated" drafts with the co-located --draft;
    # "cloud_only": the target decodes one token per round, no draft needed.
    # cloud_only_draft_pass: each cloud-only round also runs one discarded co-located draft pass
    fused_rounds: Literal["colocated", "cloud_only"] = "colocated"
    cloud_only_draft_pass: bool = False

    def validate(self) -> None:
        self._validate_semantic()
        if self.cloud_only_draft_pass and self.fused_rounds != "cloud_only":
            raise ConfigError(
                "cloud_only_draft_pass",
                f"needs fused_rounds cloud_only (--fused-rounds cloud_only), got "
                f"{self.fused_rounds}",
            )
        for i, token in enumerate(self.auth_tokens):
            if not token.strip():
                raise ConfigError(
                    f"auth_tokens[{i}]",
                    "is empty: give a secret, or no auth token at all for a server without auth",
                )
        for cls, target in self.slo_classes.items():
            if target is not None and not 0 < target < math.inf:
                raise ConfigError(
                    f"slo_classes.{cls}", f"must be a finite number > 0 or null, got {target}"
                )
        self._validate_batching()
        if not 0 <= self.port <= 65535:
            raise ConfigError("port", f"must be in 0..65535 (0 = any free port), got {self.port}")
        for name in (
            "max_batch_size",
            "max_batch_tokens",
            "kv_budget_tokens",
            "max_sessions",
            "max_sessions_per_client",
            "max_queued_per_client",
            "max_queue_depth",
            "max_draft_tokens",
            "max_message_bytes",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(name, f"must be >= 1, got {getattr(self, name)}")
        if self.session_timeout_s <= 0:
            raise ConfigError("session_timeout_s", "must be > 0")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert", "tls_cert and tls_key must be given together")
        if self.tls_cert is not None and self.tls_key is not None:
            check_tls_pair(self.tls_cert, self.tls_key)

    def _validate_semantic(self) -> None:
        if self.semantic_thresholds and self.semantic_head is None:
            raise ConfigError("semantic_thresholds", "needs a decision head (--semantic-head FILE)")
        for t in self.semantic_thresholds:
            if not 0 <= t <= THRESHOLD_STEPS:
                raise ConfigError(
                    "semantic_thresholds", f"each must be in 0..{THRESHOLD_STEPS}, got {t}"
                )
        if self.semantic_head is not None and not os.path.isfile(self.semantic_head):
            raise ConfigError("semantic_head", f"{self.semantic_head} does not exist")

    def _validate_batching(self) -> None:
        name, params = self.batching.name, self.batching.params
        if name not in BATCHING:
            raise ConfigError(
                "batching.name",
                f"unknown batching policy {name!r}; known: {sorted(BATCHING)}"
                + did_you_mean(name, BATCHING),
            )
        if name == "wisp" and "profile" not in params and "a_s" not in params:
            raise ConfigError(
                "batching.params.profile",
                "wisp batching needs Eq. 19 coefficients: give a kind: wisp profile "
                "(--profile FILE_OR_NAME, i.e. batching.params.profile) or a_s, b_compute_s, "
                "b_read_s and c_s",
            )


def check_tls_pair(cert_path: str, key_path: str) -> None:
    """``ConfigError`` naming the files unless they are a PEM certificate and its private
    key (gRPC itself would only fail to bind, without saying why)."""
    for field, path in (("tls_cert", cert_path), ("tls_key", key_path)):
        if not os.path.isfile(path):
            raise ConfigError(field, f"{path} does not exist")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_path, key_path)
    except ssl.SSLError as exc:
        raise ConfigError(
            "tls_cert",
            f"tls_cert {cert_path} and tls_key {key_path} are not a PEM certificate and its "
            f"matching private key ({exc.reason or exc})",
        ) from exc


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
    # a request gives up after this many reconnects in a row, or seconds, without a
    # committed token (edgespec.runtime.edge.progress)
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
    # drafts, a server with --semantic-head): its threshold T (0..16, required), upload
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
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ConfigError(name, f"must be a finite number >= 0, got {value}")
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
        if self.temperature < 0:
            raise ConfigError("temperature", f"must be >= 0, got {self.temperature}")
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
            if ":" not in address:
                raise ConfigError("server", f"expected host:port, got {address!r}")
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
        if self.threshold is None or not 0 <= self.threshold <= THRESHOLD_STEPS:
            raise ConfigError(
                "threshold",
                f"semantic verification needs a threshold in 0..{THRESHOLD_STEPS} (--threshold "
                f"T; a mismatch is rejected when the head's p >= T/{THRESHOLD_STEPS}), got "
                f"{self.threshold}",
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

    def semantic_request(self) -> SemanticRequest | None:
        """The semantic session this config asks for (``None`` for exact verification);
        ``ValueError`` for a channel it cannot report."""
        from edgespec.runtime.edge.semantic import SemanticRequest

        if self.verification != "semantic" or self.threshold is None:
            return None
        uplink = self.channel_uplink_mbps or self.link_bandwidth_mbps
        if not uplink:
            raise ValueError(
                "semantic verification reports the device's uplink rate to the server's "
                "decision head: give --channel-uplink-mbps (or an emulated "
                "--link-bandwidth-mbps)"
            )
        rtt_ms = self.channel_rtt_ms if self.channel_rtt_ms is not None else self.link_rtt_ms
        return SemanticRequest(
            self.threshold, uplink * 1e6, self.channel_per, rtt_ms / 1e3, self.upload
        )

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
