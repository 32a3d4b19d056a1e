"""``edgespec serve``: the gRPC verification server hosting a target model."""

from __future__ import annotations

import argparse
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", help="target model: local HF directory, .gguf or known name")
    parser.add_argument("--config", help="ServerConfig YAML file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, e.g. --set max_batch_size=8 (repeatable)",
    )
    parser.add_argument("--host")
    parser.add_argument("--port", type=int, help="0 picks a free port (printed at start)")
    parser.add_argument("--batching", help="batching policy name (fcfs, lab)")
    parser.add_argument("--draft", help="draft model for the fused baseline, or 'ngram'")
    parser.add_argument(
        "--auth-token",
        action="append",
        default=[],
        help="accepted client token (repeatable); none = no auth",
    )
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--prometheus-port", type=int)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")


def _overrides(args: argparse.Namespace) -> list[str]:
    from edgespec.config import overrides_from_flags

    keys = ("target", "host", "port", "tls_cert", "tls_key", "prometheus_port")
    flags = {key: getattr(args, key) for key in keys}
    flags["batching.name"] = args.batching
    flags["auth_tokens"] = args.auth_token or None
    return [*args.set, *overrides_from_flags(flags)]


def run(args: argparse.Namespace) -> int:
    import asyncio

    from edgespec.config import ConfigError, ServerConfig, load_config

    config = load_config(ServerConfig, args.config, _overrides(args))
    if not config.target:
        raise ConfigError("target", "no target model given (--target MODEL)")
    asyncio.run(_serve(config, args.draft, args.threads))
    return 0


async def _serve(config: Any, draft_name: str | None, threads: int | None) -> None:
    import asyncio
    import signal

    import torch

    from edgespec.models.loading import load_model
    from edgespec.policies.registry import build_policy
    from edgespec.runtime.backends.transformers_backend import TransformersTarget
    from edgespec.runtime.draft_command import make_drafter
    from edgespec.runtime.engine import VerificationEngine
    from edgespec.runtime.server import VerificationService
    from edgespec.runtime.transport import start_server

    if threads is not None:
        torch.set_num_threads(threads)
    backend = TransformersTarget(load_model(config.target, config.dtype).model)
    draft_factory = None
    if draft_name is not None:
        draft_model = None if draft_name == "ngram" else load_model(draft_name).model

        def draft_factory() -> Any:
            return make_drafter(draft_name, draft_model, backend.vocab_size)

    engine = VerificationEngine(backend, config.kv_budget_tokens, config.max_sessions)
    policy = build_policy("batching", config.batching.name, config.batching.params)
    service = VerificationService(engine, config, policy, draft_factory)
    server, port = await start_server(service)
    if config.prometheus_port is not None:
        from edgespec.runtime.prometheus import start_prometheus

        start_prometheus(config.prometheus_port, service.stats, config.host)
    print(f"edgespec serve: listening on {config.host}:{port} (target {config.target})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1.0)
    await service.stop()
