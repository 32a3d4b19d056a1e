"""``edgespec serve``'s flags (:func:`add_arguments`) and the parsers of its list-valued
ones; :mod:`edgespec.runtime.commands.serve` turns them into the server's config."""

from __future__ import annotations

import argparse
from typing import Any

from edgespec.argument_types import non_negative_float
from edgespec.arguments import add_device_arguments, add_threads_and_cpus, add_verbose
from edgespec.policies.registry import BATCHING, WINDOW
from edgespec.policies.slo import DEADLINE_RULES
from edgespec.runtime.commands.serve_target import add_backend_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", help="target model: local HF directory, .gguf or known name")
    add_backend_arguments(parser)
    parser.add_argument("--config", help="ServerConfig YAML file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, e.g. --set max_batch_size=8 (repeatable)",
    )
    parser.add_argument(
        "--host",
        help="address to listen on, also for --prometheus-port (default: --config's host, "
        "else 127.0.0.1, this machine only; 0.0.0.0: every interface)",
    )
    parser.add_argument(
        "--port", type=int, help="port to listen on (default 50051; 0 picks a free one, printed)"
    )
    parser.add_argument(
        "--batching",
        help=f"batching policy, one of {', '.join(sorted(BATCHING))} (default decodes-first; "
        "its parameters: --set batching.params.NAME=VALUE, e.g. max_prefill_tokens=1024)",
    )
    add_wisp_arguments(parser)
    parser.add_argument(
        "--deadline-rule",
        choices=DEADLINE_RULES,
        help="how a queued verification's deadline is set (default pace)",
    )
    parser.add_argument(
        "--slo-class",
        action="append",
        default=[],
        metavar="NAME=TOKENS_PER_S",
        help="an SLO class and its token-speed target (or 'none'); repeatable",
    )
    parser.add_argument(
        "--no-prefix-cache",
        action="store_true",
        help="SLED-style baseline: keep no KV between verifications (each forwards the "
        "whole context)",
    )
    parser.add_argument(
        "--draft",
        help="co-located draft model for fused rounds and the fused baseline (colocated; "
        "cloud_only: for --cloud-only-draft-pass only), or 'ngram'",
    )
    parser.add_argument(
        "--fused-rounds",
        choices=("colocated", "cloud_only"),
        help="how this server runs a session's fused rounds (a device's fused decision, "
        "draft --mode fused): colocated, speculative rounds drafted by --draft (default); "
        "cloud_only, the target decodes one token per round (no --draft needed)",
    )
    parser.add_argument(
        "--cloud-only-draft-pass",
        action="store_true",
        help="with --fused-rounds cloud_only: each fused round also runs one co-located "
        "draft pass whose token is discarded, as DSD-Sim charges (needs --draft)",
    )
    parser.add_argument(
        "--window",
        help=f"window policy consulted after each fused round, one of {', '.join(sorted(WINDOW))} "
        "(default: none, each fused request runs one round and the device decides again)",
    )
    parser.add_argument(
        "--window-params",
        metavar="JSON",
        help="the --window policy's parameters as a JSON object, e.g. '{\"gamma\": 4}'",
    )
    parser.add_argument(
        "--auth-token",
        action="append",
        default=[],
        help="accepted client token (repeatable); none = no auth",
    )
    parser.add_argument(
        "--tls-cert",
        metavar="PEM",
        help="serve TLS with this certificate (chain) file; needs --tls-key "
        "(default: no TLS, plaintext)",
    )
    parser.add_argument(
        "--tls-key", metavar="PEM", help="the private key file of --tls-cert (give both or neither)"
    )
    parser.add_argument(
        "--prometheus-port",
        type=int,
        help="also serve Prometheus /metrics on this port, on --host (needs prometheus-client; "
        "default: off)",
    )
    parser.add_argument(
        "--semantic-head",
        metavar="FILE",
        help="also serve semantic (LOSSY, WISV) verification to sessions that ask for it, with "
        "this decision head (JSON, edgespec.policies.semantic.head; default: exact only)",
    )
    parser.add_argument(
        "--semantic-thresholds",
        metavar="T1,T2,...",
        help="with --semantic-head: the thresholds (0..16) sessions may ask for (default: all)",
    )
    add_device_arguments(parser, "the target (and a co-located --draft)")
    add_threads_and_cpus(parser, "server")
    add_verbose(parser)
    parser.add_argument(
        "--round-log",
        metavar="FILE",
        help="write a JSONL record of every verified round (queued, batch start and end, "
        "deadline; the server's clock) to FILE, for WISP's Eq. 21 attribution",
    )


def add_wisp_arguments(parser: argparse._ActionsContainer) -> None:
    """``--profile`` and ``--guard-ms``: ``edgespec serve``'s, and ``bench serve``'s for its
    own server."""
    parser.add_argument(
        "--profile",
        metavar="NAME_OR_FILE",
        help="wisp batching: its Eq. 19 estimator from a 'kind: wisp' profile (a bundled "
        "name such as a100-qwen3-32b, or the YAML 'edgespec profile --out' writes)",
    )
    parser.add_argument(
        "--guard-ms",
        type=non_negative_float,
        help="wisp batching: the guard δ of its latest start times, ms (default 5, or --config's)",
    )


def wisp_params(args: argparse.Namespace) -> dict[str, Any]:
    """The wisp batching parameters ``--profile`` and ``--guard-ms`` set (``None``: not
    given), as ``batching.params`` names them."""
    guard_s = None if args.guard_ms is None else args.guard_ms / 1000
    return {"profile": args.profile, "guard_s": guard_s}


def parse_thresholds(text: str) -> list[int]:
    """``--semantic-thresholds 8,12,16`` → [8, 12, 16] (range-checked by the config)."""
    from edgespec.config import ConfigError

    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(
            "semantic_thresholds",
            f"--semantic-thresholds expects comma-separated integers in 0..16, got {text!r}",
        ) from None


def parse_slo_class(text: str) -> tuple[str, float | None]:
    """``--slo-class NAME=TOKENS_PER_S`` → (name, target); ``none`` is no target."""
    from edgespec.config import ConfigError

    name, sep, value = (part.strip() for part in text.partition("="))
    valid = bool(sep and name) and "." not in name
    target: float | None = None
    if value.lower() not in ("none", "null"):
        try:
            target = float(value)
        except ValueError:
            valid = False
    if not valid:
        raise ConfigError(
            "slo_classes",
            f"--slo-class expects NAME=TOKENS_PER_S (a number, or none; no '.' in the "
            f"name), got {text!r}",
        )
    return name, target
