"""``edgespec serve``: the gRPC verification server hosting a target model."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from edgespec.runtime.commands.cpus import pin_to_cpus
from edgespec.runtime.commands.serve_arguments import (
    add_arguments,
    parse_slo_class,
    parse_thresholds,
)
from edgespec.runtime.commands.serve_target import TargetChoice, load_target, target_choice

__all__ = ["add_arguments", "run"]


def _overrides(args: argparse.Namespace) -> list[str]:
    from edgespec.config import overrides_from_flags

    keys = ("target", "host", "port", "tls_cert", "tls_key", "prometheus_port", "deadline_rule")
    flags: dict[str, Any] = {key: getattr(args, key) for key in keys}
    flags["batching.name"] = args.batching
    flags["batching.params.profile"] = args.profile
    flags["batching.params.guard_s"] = None if args.guard_ms is None else args.guard_ms / 1000
    flags["auth_tokens"] = args.auth_token or None
    flags["prefix_cache"] = False if args.no_prefix_cache else None
    flags["semantic_head"] = args.semantic_head
    flags["fused_rounds"] = args.fused_rounds
    flags["cloud_only_draft_pass"] = True if args.cloud_only_draft_pass else None
    flags["semantic_thresholds"] = (
        None if args.semantic_thresholds is None else parse_thresholds(args.semantic_thresholds)
    )
    classes = [parse_slo_class(text) for text in args.slo_class]
    # written out here: overrides_from_flags skips None, which is a class without a target
    slo = [f"slo_classes.{name}={json.dumps(target)}" for name, target in classes]
    return [*args.set, *overrides_from_flags(flags), *slo]


def run(args: argparse.Namespace) -> int:
    import asyncio

    from edgespec.config import ConfigError, apply_overrides, from_dict, read_yaml
    from edgespec.runtime.server.batching import build_batching
    from edgespec.runtime.server.config import ServerConfig

    data = apply_overrides(read_yaml(args.config) if args.config else {}, _overrides(args))
    batching = data.get("batching")
    if isinstance(batching, dict) and "name" not in batching:  # --profile without --batching
        batching["name"] = ServerConfig().batching.name
    config = from_dict(ServerConfig, data)
    policy = build_batching(config.batching)  # validated here, once; before any model loads
    if not config.target:
        raise ConfigError("target", "no target model given (--target MODEL)")
    draft = draft_to_load(config, args.draft)
    choice = target_choice(args, config.target, args.threads)  # a non-GGUF fails here
    semantic_head(config)  # a file that is not a head fails before the model loads
    window = window_from_args(args)
    round_log = None if args.round_log is None else _round_log(args.round_log)
    pin_to_cpus(args.cpus)
    try:
        asyncio.run(
            _serve(config, policy, draft, args.threads, window, round_log, args.verbose, choice)
        )
    finally:
        if round_log is not None:
            round_log.close()
    return 0


def draft_to_load(config: Any, draft: str | None) -> str | None:
    """The ``--draft`` the server loads: none for cloud-only fused rounds without their
    draft pass (they run no draft; said on stderr). ``--cloud-only-draft-pass`` without
    ``--draft`` is a :class:`ConfigError` naming both."""
    from edgespec.config import ConfigError
    from edgespec.runtime.server.cloud_only import NEEDS_DRAFT

    if config.cloud_only_draft_pass and draft is None:
        raise ConfigError("cloud_only_draft_pass", NEEDS_DRAFT)
    if draft is None or config.fused_rounds == "colocated" or config.cloud_only_draft_pass:
        return draft
    _say(f"--draft {draft} is not loaded: cloud-only fused rounds without --cloud-only-draft-pass")
    return None


def semantic_head(config: Any) -> Any:
    """The decision head ``semantic_head`` names (``None`` without one), read before the
    model loads; a file that is not a head is a :class:`ConfigError` naming it."""
    from edgespec.config import ConfigError
    from edgespec.runtime.server.semantic import load_semantic_head

    if config.semantic_head is None:
        return None
    try:
        return load_semantic_head(config.semantic_head)
    except ValueError as exc:
        raise ConfigError("semantic_head", str(exc)) from None


def semantic_rules_for(config: Any, head: Any, model: Any) -> Any:
    """The verification rules the server serves: exact, plus semantic with ``head`` (its
    widths checked against the target ``model``'s hidden size, or ``model`` itself when it
    is that size, as on llama.cpp); a mismatch is a :class:`ConfigError`."""
    from edgespec.config import ConfigError
    from edgespec.runtime.server.semantic import semantic_rules
    from edgespec.runtime.server.verification import EXACT_RULES

    if head is None:
        return EXACT_RULES
    width = model if isinstance(model, int) else int(model.config.get_text_config().hidden_size)
    thresholds = config.semantic_thresholds or None
    try:
        return semantic_rules(head, thresholds, target_hidden_size=width)
    except ValueError as exc:
        raise ConfigError("semantic_head", str(exc)) from None


def _say(line: str) -> None:
    """A service event line (a lossy session opened) on stderr."""
    print(f"edgespec serve: {line}", file=sys.stderr, flush=True)


def _round_log(path: str) -> Any:
    """The ``--round-log`` file, opened before the model loads (a bad path fails fast)."""
    from pathlib import Path

    from edgespec.errors import UserInputError
    from edgespec.runtime.server.round_log import RoundLog

    try:
        return RoundLog(Path(path))
    except OSError as exc:
        raise UserInputError(f"--round-log {path}: {exc.strerror or exc}") from exc


def window_from_args(args: argparse.Namespace) -> Any:
    """The window policy ``--window`` / ``--window-params`` name (``None`` without
    ``--window``); a bad name, JSON or parameter is a :class:`UserInputError` naming the
    flag."""
    from edgespec.errors import UserInputError
    from edgespec.policies.registry import PolicyConfigError, build_policy

    if args.window is None:
        if args.window_params is not None:
            raise UserInputError("--window-params needs --window NAME")
        return None
    try:
        params = json.loads(args.window_params) if args.window_params is not None else {}
    except json.JSONDecodeError as exc:
        raise UserInputError(f"--window-params is not JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise UserInputError(f"--window-params must be a JSON object, got {params!r}")
    try:
        return build_policy("window", args.window, params)
    except PolicyConfigError as exc:
        raise UserInputError(f"--window: {exc}") from exc


async def _serve(
    config: Any,
    policy: Any,
    draft_name: str | None,
    threads: int | None,
    window: Any = None,
    round_log: Any = None,
    verbose: bool = False,
    choice: TargetChoice | None = None,
) -> None:
    import asyncio
    import signal

    import torch

    from edgespec.models.loading import load_model
    from edgespec.models.registry import resolve_model
    from edgespec.runtime.edge.draft_backends import make_drafter
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService
    from edgespec.runtime.wire.grpc_server import start_server
    from edgespec.runtime.wire.ports import ensure_port_free

    ensure_port_free(config.host, config.port)  # an address it cannot listen on, or a bad
    if config.prometheus_port is not None:  # model name or path, fails before anything loads
        ensure_port_free(config.host, config.prometheus_port)
    resolve_model(config.target)
    if draft_name not in (None, "ngram"):
        resolve_model(draft_name)
    if threads is not None:
        torch.set_num_threads(threads)
    say = Stages()
    target = load_target(choice or TargetChoice("transformers"), config, verbose, say)
    backend = target.backend
    if getattr(backend, "inexactness", None) is not None:
        _say(f"LOSSY: batched logits differ from one-at-a-time ones ({backend.inexactness})")
    head = semantic_head(config)
    rules = semantic_rules_for(config, head, target.hidden_size)
    max_sessions = config.max_sessions
    if target.max_sessions is not None and max_sessions > target.max_sessions:
        max_sessions = target.max_sessions
        _say(f"max_sessions {config.max_sessions} capped to the {max_sessions} llama.cpp sequences")
    draft_factory = None
    if draft_name is not None:
        say(f"loading the draft {draft_name}")
        draft_model = (
            None if draft_name == "ngram" else load_model(draft_name, verbose=verbose).model
        )

        def draft_factory() -> Any:
            return make_drafter(draft_name, draft_model, backend.vocab_size)

    engine = VerificationEngine(
        backend,
        config.kv_budget_tokens,
        max_sessions,
        rules=rules,
        prefix_cache=config.prefix_cache,
    )
    service = VerificationService(
        engine, config, policy, draft_factory, window=window, round_log=round_log, log=_say
    )
    say("starting the gRPC server")
    server, port = await start_server(service)
    say.done()
    if config.prometheus_port is not None:
        from edgespec.runtime.server.prometheus import start_prometheus

        start_prometheus(config.prometheus_port, service.metrics, config.host)
    cache = "" if config.prefix_cache else ", no prefix cache"
    fused = fused_rounds_label(config, window)
    lossy = ""
    if head is not None:
        allowed = sorted(config.semantic_thresholds) or "0..16"
        lossy = (
            f", semantic (LOSSY) verification on request: head {config.semantic_head}, "
            f"thresholds {allowed}"
        )
    print(
        f"edgespec serve: listening on {config.host}:{port} (target {config.target}"
        f"{backend_label(choice)}, batching {config.batching.name}{cache}{fused}{lossy})",
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1.0)
    await service.stop()


def backend_label(choice: TargetChoice | None) -> str:
    """What the listening line says of a backend other than transformers."""
    if choice is None or choice.name == "transformers":
        return ""
    return f" on {choice.name}" + ("" if choice.name == "llamacpp" else " (LOSSY)")


def fused_rounds_label(config: Any, window: Any) -> str:
    """What the listening line says of fused rounds: cloud-only (with its draft pass), the
    fused-run window; nothing for colocated rounds without a window."""
    label = ""
    if config.fused_rounds == "cloud_only":
        label = ", cloud-only fused rounds"
        label += " with a co-located draft pass" if config.cloud_only_draft_pass else ""
    return label if window is None else f"{label}, fused-run window {window!r}"


class Stages:
    """``edgespec serve``'s start-up, said on stderr as it goes: each stage as it starts,
    after the seconds since start-up began (a first load is minutes of otherwise silent
    work)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._start = clock()

    def _say(self, text: str) -> None:
        elapsed = self._clock() - self._start
        print(f"edgespec serve: [{elapsed:5.1f} s] {text}", file=sys.stderr, flush=True)

    def __call__(self, stage: str) -> None:
        self._say(f"{stage} ...")

    def done(self) -> None:
        self._say("ready")
