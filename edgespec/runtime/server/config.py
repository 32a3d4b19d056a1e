"""The runtime's configs: the verification server's (``edgespec serve``) and an edge
drafter's (``edgespec draft``), loaded through :mod:`edgespec.config`."""

from __future__ import annotations

import dataclasses
import math
import os
import ssl
import types
from collections.abc import Mapping
from typing import Literal

from edgespec.arguments import DevicePlacement
from edgespec.config import ConfigError, PolicySpec
from edgespec.policies.semantic.head import THRESHOLD_STEPS
from edgespec.policies.slo import DeadlineRule, token_speed_target_problem
from edgespec.runtime.edge.config import MAX_MESSAGE_BYTES
from edgespec.server_access_types import auth_token_problem

MIN_SESSION_TIMEOUT_S = 0.01
"""The shortest ``session_timeout_s``: the server looks for idle sessions every quarter of
it (at most every second), and 1e-9 s made that a loop that never slept."""
MAX_DRAFT_TOKENS = 2**32 - 1
"""The largest ``max_draft_tokens``: Health reports it as a uint32 (a larger one made every
Health call fail, and with it every client's start)."""
MAX_CONNECTIONS = 2**31 - 1
"""The largest ``max_connections``: gRPC takes its ``grpc.max_allowed_incoming_connections``
option as a C int (a larger one made building the server raise OverflowError)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ServerConfig:
    """The verification server (``edgespec serve``). ``batching`` is validated where it
    is built, once (:func:`edgespec.runtime.server.batching.build_batching`)."""

    target: str = ""
    host: str = "127.0.0.1"
    port: int = 50051
    # where the target (and a co-located draft) runs: cpu, cuda or cuda:N (--device); its
    # weights' dtype (--dtype; null: float32 on cpu, bfloat16 on cuda)
    device: str = "cpu"
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    # decoding rounds right after the oldest entry, ahead of other prompts' prefill parts
    # (policies/batching.DecodesFirstBatching); fcfs: the papers' arrival order
    batching: PolicySpec = dataclasses.field(default_factory=lambda: PolicySpec("decodes-first"))
    max_batch_size: int = 16
    max_batch_tokens: int = 4096
    # a verification's uncached context longer than this (a long prompt) is forwarded this
    # many tokens per batch, beside the other sessions' rounds (server/prefill_parts);
    # null: in one pass, however long
    prefill_part_tokens: int | None = 512
    kv_budget_tokens: int = 65536
    max_sessions: int = 256
    # per client (its auth token, or its client_id without auth); a session has at most one
    # verification queued, so this bounds a client's queued verifications too
    max_sessions_per_client: int = 64
    max_queued_per_client: int = 64  # verifications waiting in the queue, per client
    max_queue_depth: int = 1024
    max_draft_tokens: int = 32
    max_message_bytes: int = 4 << 20
    # gRPC connections open at once, handshaking ones included (edgespec.runtime.wire.
    # grpc_limits: the handshake and idle timeouts, the file descriptors it needs)
    max_connections: int = 512
    session_timeout_s: float = 300.0
    # how long the server holds a client's grouped verify calls (VerifyRequest.batch_id)
    # for the rest of their group, from the first's arrival (server/batch_groups)
    group_wait_s: float = 0.05
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
        self.placement()
        self._validate_semantic()
        if self.cloud_only_draft_pass and self.fused_rounds != "cloud_only":
            got = f"cloud_only, got {self.fused_rounds}"
            raise ConfigError("cloud_only_draft_pass", f"needs fused_rounds {got}",
                              flag_message=f"needs --fused-rounds {got}")  # fmt: skip
        for i, token in enumerate(self.auth_tokens):
            if (problem := auth_token_problem(token)) is not None:
                raise ConfigError(f"auth_tokens[{i}]", problem)
        for cls, target in self.slo_classes.items():
            if (problem := token_speed_target_problem(target)) is not None:
                raise ConfigError(f"slo_classes.{cls}", problem)
        if self.deadline_rule != "pace" and all(t is None for t in self.slo_classes.values()):
            why = "no class has a token-speed target to set deadlines from (none: no deadline)"
            raise ConfigError("deadline_rule", f"{self.deadline_rule}: {why}",
                              flag_message=f"{self.deadline_rule}: {why}; give --slo-class "
                              "NAME=TOKENS_PER_S")  # fmt: skip
        if not 0 <= self.port <= 65535:
            raise ConfigError("port", f"must be in 0..65535 (0 = any free port), got {self.port}")
        if self.prometheus_port is not None and not 1 <= self.prometheus_port <= 65535:
            raise ConfigError("prometheus_port", f"must be in 1..65535, got {self.prometheus_port}")
        if self.prometheus_port is not None and self.prometheus_port == self.port:
            why = f"(the gRPC server's), got {self.port}"
            raise ConfigError("prometheus_port", f"must differ from port {why}",
                              flag_message=f"must differ from --port {why}")  # fmt: skip
        self._validate_limits()
        self._validate_times()
        for given, missing in (("tls_cert", "tls_key"), ("tls_key", "tls_cert")):
            if getattr(self, given) is not None and getattr(self, missing) is None:
                why = "(TLS serves a certificate with its private key)"
                flag = "--" + missing.replace("_", "-")
                raise ConfigError(given, f"needs {missing} too {why}",
                                  flag_message=f"needs {flag} too {why}")  # fmt: skip
        if self.tls_cert is not None and self.tls_key is not None:
            check_tls_pair(self.tls_cert, self.tls_key)

    def _validate_times(self) -> None:
        if not (math.isfinite(self.session_timeout_s) and self.session_timeout_s > 0):
            raise ConfigError(
                "session_timeout_s", f"must be a finite number > 0, got {self.session_timeout_s}"
            )
        if self.session_timeout_s < MIN_SESSION_TIMEOUT_S:
            raise ConfigError(
                "session_timeout_s",
                f"must be at least {MIN_SESSION_TIMEOUT_S:g} s (the server looks for idle "
                f"sessions every quarter of it), got {self.session_timeout_s:g}",
            )
        if not (math.isfinite(self.group_wait_s) and self.group_wait_s >= 0):
            raise ConfigError(
                "group_wait_s", f"must be a finite number >= 0, got {self.group_wait_s}"
            )

    def _validate_limits(self) -> None:
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
            "max_connections",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(name, f"must be >= 1, got {getattr(self, name)}")
        if self.prefill_part_tokens is not None and self.prefill_part_tokens < 1:
            got = self.prefill_part_tokens
            raise ConfigError("prefill_part_tokens", f"must be >= 1 or null, got {got}")
        for name, limit, why in (
            ("max_message_bytes", MAX_MESSAGE_BYTES, "gRPC takes it as a C int"),
            (
                "max_connections",
                MAX_CONNECTIONS,
                "gRPC takes grpc.max_allowed_incoming_connections as a C int",
            ),
            ("max_draft_tokens", MAX_DRAFT_TOKENS, "Health reports it as a uint32"),
        ):
            if getattr(self, name) > limit:
                raise ConfigError(name, f"must be <= {limit:,} ({why}), got {getattr(self, name)}")

    def placement(self) -> DevicePlacement:
        """``device`` and ``dtype``, the dtype's default resolved (float32 on the CPU,
        bfloat16 on a GPU); a device that is not cpu, cuda or cuda:N is a
        :class:`ConfigError` naming ``device``."""
        try:
            return DevicePlacement.on(self.device, self.dtype)
        except ValueError as exc:
            field = "device" if str(exc).startswith("--device") else "dtype"
            raise ConfigError(field, str(exc).partition(": ")[2]) from None

    def _validate_semantic(self) -> None:
        if self.semantic_thresholds and self.semantic_head is None:
            needs = "needs a decision head"
            raise ConfigError("semantic_thresholds", f"{needs} (semantic_head: FILE)",
                              flag_message=f"{needs} (--semantic-head FILE)")  # fmt: skip
        for t in self.semantic_thresholds:
            if not 0 <= t <= THRESHOLD_STEPS:
                raise ConfigError(
                    "semantic_thresholds", f"each must be in 0..{THRESHOLD_STEPS}, got {t}"
                )
        if self.semantic_head is not None and not os.path.isfile(self.semantic_head):
            what = (
                "is a folder, not a file" if os.path.isdir(self.semantic_head) else "does not exist"
            )
            raise ConfigError("semantic_head", f"{self.semantic_head} {what}")


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
        problem = f"are not a PEM certificate and its matching private key ({exc.reason or exc})"
        raise ConfigError(
            "tls_cert",
            f"tls_cert {cert_path} and tls_key {key_path} {problem}",
            flag_message=f"--tls-cert {cert_path} and --tls-key {key_path} {problem}",
        ) from exc
