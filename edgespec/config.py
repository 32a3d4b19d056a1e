"""Config loading: YAML (plus ``key.path=value`` overrides) into frozen dataclasses.

Validation happens once, here, and every error names the offending field by its full
path (``servers[0].count``). Loaded configs are frozen: nothing mutates them at run time.
Config dataclasses may define ``validate(self) -> None`` for cross-field checks; it is
called after construction and its ``ValueError`` is reported against the section.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import ssl
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml

from edgespec.core.tree import parse_branching
from edgespec.errors import UserInputError
from edgespec.policies.registry import BATCHING, ROUTING
from edgespec.policies.slo import DeadlineRule

T = TypeVar("T")


class ConfigError(UserInputError, ValueError):
    """A config value that is missing, unknown or of the wrong type or range."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path or "<root>"
        super().__init__(f"config field '{self.path}': {message}")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _describe(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        options = [a for a in args if a is not type(None)]
        for option in options:
            try:
                return _convert(option, value, path)
            except ConfigError as exc:
                errors.append(exc)
        if len(options) == 1:  # Optional[X]: X's own error says what is wrong
            raise errors[0]
        raise ConfigError(path, f"{_describe(value)} matches none of {tp}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(path, f"must be one of {list(args)}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_dict(tp, value, path)
    if origin in (tuple, Sequence) or tp is tuple:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ConfigError(path, f"expected a list, got {_describe(value)}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ConfigError(path, f"expected {len(args)} items, got {len(value)}")
            return tuple(
                _convert(a, v, _join(path, i))
                for i, (a, v) in enumerate(zip(args, value, strict=True))
            )
        item_tp = args[0] if args else Any
        return tuple(_convert(item_tp, v, _join(path, i)) for i, v in enumerate(value))
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"expected a mapping, got {_describe(value)}")
        key_tp, val_tp = args if args else (Any, Any)
        return types.MappingProxyType(
            {
                _convert(key_tp, k, path): _convert(val_tp, v, _join(path, str(k)))
                for k, v in value.items()
            }
        )
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"expected true/false, got {_describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"expected an integer, got {_describe(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"expected a number, got {_describe(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"expected a string, got {_describe(value)}")
        return value
    if tp is Path:
        if not isinstance(value, str | Path):
            raise ConfigError(path, f"expected a path, got {_describe(value)}")
        return Path(value)
    raise ConfigError(path, f"unsupported config type {tp}")


def from_dict(cls: type[T], data: Any, path: str = "") -> T:
    """Build dataclass ``cls`` from a mapping, validating names, types and ranges."""
    if not isinstance(data, Mapping):
        raise ConfigError(path, f"expected a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(_join(path, unknown[0]), f"unknown field; known: {sorted(fields)}")
    kwargs: dict[str, Any] = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], _join(path, name))
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(_join(path, name), "required field is missing")
    try:
        obj = cls(**kwargs)
        validate = getattr(obj, "validate", None)
        if callable(validate):
            validate()
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(path, str(exc)) from exc
    return obj


def parse_override(text: str) -> tuple[list[str], Any]:
    """``servers.count=4`` → (['servers', 'count'], 4). Values are parsed as YAML."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(text, "override must look like key.path=value")
    return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else ""


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Return a deep copy of ``data`` with each ``key.path=value`` override applied.

    A numeric path segment indexes a list (``devices.0.count=50``); the item must exist.
    Missing mapping keys are created.
    """
    result: dict[str, Any] = _deep_copy(data)
    for text in overrides:
        keys, value = parse_override(text)
        node: Any = result
        for i, key in enumerate(keys):
            where = ".".join(keys[: i + 1])
            last = i == len(keys) - 1
            if isinstance(node, list):
                if not key.isdigit() or int(key) >= len(node):
                    raise ConfigError(where, f"list index must be 0..{len(node) - 1}, got {key!r}")
                if last:
                    node[int(key)] = value
                else:
                    node = node[int(key)]
            elif isinstance(node, dict):
                if last:
                    node[key] = value
                else:
                    if node.get(key) is None:
                        node[key] = {}
                    node = node[key]
            else:
                raise ConfigError(
                    where, "cannot override inside a value that is not a mapping or list"
                )
    return result


def overrides_from_flags(values: Mapping[str, Any]) -> list[str]:
    """``key.path=value`` overrides for the CLI flags that were given (``None`` = not given).

    Values are JSON-encoded, which YAML parses back to the same value.
    """
    return [f"{key}={json.dumps(value)}" for key, value in values.items() if value is not None]


def _deep_copy(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {k: _deep_copy(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_deep_copy(v) for v in data]
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, with errors that name the file."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(str(file), "file not found")
    try:
        data = yaml.safe_load(file.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(str(file), f"invalid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(file), f"top level must be a mapping, got {type(data).__name__}")
    return data


def read_jsonl(path: str | Path, what: str = "file") -> Iterator[tuple[str, Any]]:
    """Yield ``(where, object)`` for each non-blank line of a JSONL file, ``where`` being
    ``name:line`` for error messages; a missing file or a bad line is a ConfigError."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(str(file), f"{what} not found")
    with file.open() as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{file.name}:{line_no}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(where, f"invalid JSON: {exc.msg}") from exc


def load_config(cls: type[T], path: str | Path | None = None, overrides: Sequence[str] = ()) -> T:
    """Load ``cls`` from an optional YAML file plus CLI overrides; defaults fill the rest."""
    data = read_yaml(path) if path is not None else {}
    return from_dict(cls, apply_overrides(data, overrides))


# --- configs shared by the CLI's serve and draft commands


@dataclasses.dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy by registry name plus its keyword parameters."""

    name: str
    params: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({})
    )


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

    def validate(self) -> None:
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

    def _validate_batching(self) -> None:
        name, params = self.batching.name, self.batching.params
        if name not in BATCHING:
            raise ConfigError(
                "batching.name", f"unknown batching policy {name!r}; known: {sorted(BATCHING)}"
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
    lookup: bool = False  # prompt lookup first, the neural draft where it finds nothing
    tree: str | None = None  # token-tree branching per depth, e.g. "2,2,1,1" (greedy only)
    tree_min_prob: float = 0.0  # prune tree candidates below this draft path probability
    tree_max_nodes: int = 24  # tokens per tree at most (keep <= the server's max_draft_tokens)
    # emulated link on the drafter's transport (edgespec.runtime.emulated_link): added RTT,
    # mean exponential jitter per message, bandwidth (null/0: unlimited); all 0 = off
    link_rtt_ms: float = 0.0
    link_jitter_ms: float = 0.0
    link_bandwidth_mbps: float | None = None
    link_seed: int | None = None  # seed of the jitter draws (None: fresh entropy)

    def validate(self) -> None:
        for name in ("link_rtt_ms", "link_jitter_ms", "link_bandwidth_mbps"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ConfigError(name, f"must be a finite number >= 0, got {value}")
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
                f"unknown routing policy {self.routing.name!r}; known: {sorted(ROUTING)}",
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
