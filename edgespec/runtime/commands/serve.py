"""``edgespec serve``: the gRPC verification server hosting a target model."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from edgespec.runtime.commands.cpus import apply_cpus_and_threads, thread_count
from edgespec.runtime.commands.serve_arguments import (
    add_arguments,
    parse_slo_class,
    parse_thresholds,
    wisp_params,
)
from edgespec.runtime.commands.serve_profile import check_profile, profile_range_warning
from edgespec.runtime.commands.serve_service import (
    build_service,
    check_before_loading,
    semantic_head,
)
from edgespec.runtime.commands.serve_target import TargetChoice, load_target, target_choice
from edgespec.runtime.commands.signals import stopped
from edgespec.runtime.commands.stages import Stages
from edgespec.runtime.edge.block_limit import check_window_fits

__all__ = ["add_arguments", "run"]


FLAG_NAMES = {"batching.name": "--batching", "batching.params.profile": "--profile",
              "auth_tokens": "--auth-token", "prefix_cache": "--no-prefix-cache"}  # fmt: skip
"""The flags that set a ServerConfig field of another name than theirs (``--guard-ms`` is
left unnamed: its value is converted to the field's seconds, which its error shows)."""


def _flag_fields(args: argparse.Namespace) -> dict[str, str]:
    """The ServerConfig fields the flags given set (override key → the flag): a field's
    error names the flag the user typed (:func:`edgespec.config.named_by_flags`)."""
    keys = {override.partition("=")[0] for override in _flag_overrides(args)}
    fields = {key: FLAG_NAMES.get(key, "--" + key.replace("_", "-")) for key in keys}
    classes = {key: f"--slo-class {key.partition('.')[2]}" for key in keys
               if key.startswith("slo_classes.")}  # fmt: skip
    fields.pop("batching.params.guard_s", None)
    return fields | classes


def _overrides(args: argparse.Namespace) -> list[str]:
    """``--set``'s overrides, then the flags'."""
    return [*args.set, *_flag_overrides(args)]


def _flag_overrides(args: argparse.Namespace) -> list[str]:
    """The flags given as ServerConfig overrides."""
    from edgespec.config import overrides_from_flags

    keys = ("target", "host", "port", "tls_cert", "tls_key", "prometheus_port", "deadline_rule",
            "device", "dtype")  # fmt: skip
    flags: dict[str, Any] = {key: getattr(args, key) for key in keys}
    flags["batching.name"] = args.batching
    flags |= {f"batching.params.{key}": value for key, value in wisp_params(args).items()}
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
    return [*overrides_from_flags(flags), *slo]


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C or SIGTERM, then stop (one line, exit 130 or 143; either while
    the target loads too); an error at a field a flag set names the flag."""
    from edgespec.config import named_by_flags

    with named_by_flags(_flag_fields(args)):  # SIGTERM and Ctrl-C are cli.main's
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from edgespec.config import (
        ConfigError,
        apply_overrides,
        check_repeats,
        default_policy_names,
        from_dict,
        located_in,
        read_yaml,
    )
    from edgespec.runtime.server.batching import build_batching
    from edgespec.runtime.server.config import ServerConfig

    check_repeats(args.set)  # --set k=1 --set k=2: the first was lost (a flag wins over --set)
    overrides = _overrides(args)
    data = apply_overrides(read_yaml(args.config) if args.config else {}, overrides)
    data = default_policy_names(ServerConfig, data)  # --profile without --batching
    located = located_in(Path(args.config), overrides) if args.config else nullcontext()
    with located:  # an error at a field the file gives starts with file:line
        config = from_dict(ServerConfig, data)
        policy = build_batching(config.batching)  # validated here, once; before models load
    if not config.target:
        raise ConfigError("target", "no target model given (--target MODEL)")
    draft = draft_to_load(config, args.draft)
    threads = thread_count(args.cpus, args.threads)  # llama.cpp's: --threads, else --cpus
    choice = target_choice(args, config.target, threads)  # a non-GGUF fails here
    semantic_head(config, _say, draft)  # not a head, or another pair's: fails before loading
    check_profile(config)  # a drafter's or another model's profile: refused
    window = window_from_args(args)
    if window is not None:  # its blocks within what this server verifies, before loading
        check_window_fits(window, False, config.max_draft_tokens)
    round_log = None if args.round_log is None else _round_log(args.round_log)
    apply_cpus_and_threads(args.cpus, args.threads)
    try:
        serving = _serve(config, policy, draft, window=window, round_log=round_log,
                         verbose=args.verbose, choice=choice)  # fmt: skip
        signum = asyncio.run(serving)
    finally:
        if round_log is not None:
            round_log.close()
    return stopped("serve", signum)


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


def _say(line: str) -> None:
    """A service event line (a lossy session opened) on stderr."""
    print(f"edgespec serve: {line}", file=sys.stderr, flush=True)


def _round_log(path: str) -> Any:
    """The ``--round-log`` file, opened before the model loads (a bad path fails fast)."""
    from pathlib import Path

    from edgespec.errors import UserInputError
    from edgespec.runtime.server.round_log import RoundLog

    if not path:  # Path("") is this folder: "Is a directory" would not say what is wrong
        raise UserInputError("--round-log needs a file name, got ''")
    try:
        return RoundLog(Path(path), _say)
    except OSError as exc:
        raise UserInputError(f"--round-log {path}: {exc.strerror or exc}") from exc


def window_from_args(args: argparse.Namespace) -> Any:
    """The window policy ``--window`` / ``--window-params`` name (``None`` without
    ``--window``); a bad name, JSON or parameter is a :class:`UserInputError` naming the
    flag that gave it."""
    from edgespec.errors import UserInputError
    from edgespec.policies.registry import PolicyConfigError, UnknownPolicyError, build_policy

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
        flag = "--window" if isinstance(exc, UnknownPolicyError) else "--window-params"
        raise UserInputError(f"{flag}: {exc}") from exc


async def _serve(
    config: Any,
    policy: Any,
    draft_name: str | None,
    window: Any = None,
    round_log: Any = None,
    verbose: bool = False,
    choice: TargetChoice | None = None,
) -> int:
    """Load the target (and draft), serve until SIGINT or SIGTERM, then stop; the signal."""
    from edgespec.runtime.wire.grpc_server import start_server
    from edgespec.runtime.wire.ports import host_port

    check_before_loading(config, draft_name)
    say = Stages("serve")
    target = load_target(choice or TargetChoice("transformers"), config, verbose, say)
    if (beyond := profile_range_warning(config, target.backend.max_context_tokens)) is not None:
        _say(beyond)  # a wisp profile used beyond what it measured
    head = semantic_head(config)
    service = build_service(
        config, policy, target, head, draft_name, window, round_log, verbose, say, _say
    )
    say("starting the gRPC server")
    signalled = _first_signal()  # from here a signal stops the server below, whenever it comes
    server, port = await start_server(service)
    try:
        say.done()
        if config.prometheus_port is not None:
            from edgespec.runtime.server.prometheus import start_prometheus

            start_prometheus(config.prometheus_port, service.metrics, config.host)
        serving = _serving(config, window, head, choice)
        print(
            f"edgespec serve: listening on {host_port(config.host, port)} ({serving})", flush=True
        )
        return await signalled
    finally:
        await server.stop(1.0)
        await service.stop()


def _serving(config: Any, window: Any, head: Any, choice: TargetChoice | None) -> str:
    """What the listening line says the server serves."""
    cache = "" if config.prefix_cache else ", no prefix cache"
    parts = config.prefill_part_tokens
    cache += "" if parts is None else f", prefill in parts of {parts} tokens"
    fused = fused_rounds_label(config, window)
    lossy = ""
    if head is not None:
        allowed = sorted(config.semantic_thresholds) or "0..16"
        lossy = (
            f", semantic (LOSSY) verification on request: head {config.semantic_head}, "
            f"thresholds {allowed}"
        )
    return (
        f"target {config.target}{backend_label(choice, config.placement())}, "
        f"batching {config.batching.name}"
        f"{cache}{fused}{lossy}"
    )


def _first_signal() -> asyncio.Future[int]:
    """A future of the first SIGINT or SIGTERM's number, the loop's handlers installed now
    (before the server starts: one that came between its start and the listening line
    raised past the running server, which then complained as the process exited). A signal
    the process was started ignoring stays ignored, as in every command (a shell without job
    control starts ``serve &`` with SIGINT ignored: SIGTERM stops it)."""
    import asyncio
    import signal

    first: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def received(signum: int) -> None:
        if not first.done():
            first.set_result(signum)

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            loop.add_signal_handler(sig, received, sig)
    return first


def backend_label(choice: TargetChoice | None, placement: Any = None) -> str:
    """What the listening line says of a backend other than transformers, or of a
    transformers target's device and dtype other than the CPU's float32 (``placement``)."""
    if choice is None or choice.name == "transformers":
        default = placement is None or (placement.device, placement.dtype) == ("cpu", "float32")
        return "" if default else f" on {placement.device}, {placement.dtype}"
    return f" on {choice.name}" + ("" if choice.name == "llamacpp" else " (LOSSY)")


def fused_rounds_label(config: Any, window: Any) -> str:
    """What the listening line says of fused rounds: cloud-only (with its draft pass), the
    fused-run window; nothing for colocated rounds without a window."""
    label = ""
    if config.fused_rounds == "cloud_only":
        label = ", cloud-only fused rounds"
        label += " with a co-located draft pass" if config.cloud_only_draft_pass else ""
    return label if window is None else f"{label}, fused-run window {window!r}"
