"""``edgespec drafting-server``'s flags (:mod:`edgespec.runtime.commands.drafting_server`) and
:func:`check_flags`, their checks before the server is asked or the draft loads."""

from __future__ import annotations

import argparse
import math
import os
import secrets

from edgespec.argument_types import token_ids
from edgespec.arguments import add_device_arguments, add_threads_and_cpus, add_verbose
from edgespec.core.wire_limits import UINT32_LIMIT
from edgespec.datasets.prompts import PROMPT_SETS
from edgespec.output_paths import output_file
from edgespec.runtime.commands.server_access_arguments import (
    add_server_access_arguments,
    check_tls_name,
)
from edgespec.server_access_types import server_address

MAX_TIMEOUT_S = 86_400.0
"""The longest ``--timeout-s`` (a day)."""

DEFAULT_SESSIONS = 8
"""``--num-sessions`` when not given (with ``--prompts``)."""

DEFAULT_BATCH_SIZE = 4
"""``--batch-size`` when not given (and no ``--plan``)."""

DEFAULT_GAMMA = 4
"""``--gamma`` when not given (and no ``--plan``)."""

MAX_SESSIONS = 65_536
"""The most ``--num-sessions`` (each a prompt held in memory and a session on the server,
whose per-client quota refuses most runs far sooner)."""

SESSION_SUFFIX = f"-{'0' * 8}-{MAX_SESSIONS - 1}"
"""The longest its session ids, ``<client-id>-<8 hex>-<index>``, add to ``--client-id``
(:func:`edgespec.runtime.validation.client_id_problem` holds them within the server's
limit)."""


def default_client_id() -> str:
    """``drafting-server-<pid>-<8 hex>``: a client id of this process alone, so that drafting
    servers sharing a verification server have a session quota each."""
    return f"drafting-server-{os.getpid()}-{secrets.token_hex(4)}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server", required=True, type=server_address, help="host:port of an edgespec serve"
    )
    parser.add_argument(
        "--draft", required=True, help="draft model (HF directory or name, e.g. gemma3-270m-draft)"
    )
    prompts = parser.add_mutually_exclusive_group()
    prompts.add_argument(
        "--prompts",
        default="gsm8k",
        choices=PROMPT_SETS,
        metavar="SET",
        help=f"prompt dataset, one prompt per session ({', '.join(PROMPT_SETS)}; default "
        "gsm8k; tokenized with the draft's or the server's target's tokenizer)",
    )
    prompts.add_argument(
        "--prompt-ids",
        type=token_ids,
        action="append",
        metavar="IDS",
        help="one session's comma-separated prompt token ids (repeat: one per session)",
    )
    parser.add_argument("--split", help="--prompts' dataset split (default test)")
    parser.add_argument(
        "--num-sessions",
        type=int,
        help=f"sessions (prompts) with --prompts (default {DEFAULT_SESSIONS}; with --prompt-ids: "
        "one per --prompt-ids)",
    )
    _add_schedule(parser)
    parser.add_argument(
        "--max-new-tokens", type=int, default=32, help="tokens per session (default 32)"
    )
    parser.add_argument(
        "--pipeline",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="draft the next batch while the previous one verifies (default: pipelined; with "
        "--plan, as its planner.pipelined says)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="run without pipelining, then pipelined (same prompts, same process); print "
        "the speed-up and check the outputs are token-identical (exit 1 if not)",
    )
    parser.add_argument(
        "--json", type=output_file, metavar="OUT", help="write the settings and results here"
    )
    _add_connection(parser)
    add_device_arguments(parser, "the draft model")
    add_threads_and_cpus(parser, "drafting server")
    add_verbose(parser)


def _add_schedule(parser: argparse.ArgumentParser) -> None:
    """The batches and γ: ``--batch-size`` and ``--gamma``, or ``--plan``'s planner."""
    parser.add_argument(
        "--batch-size", type=int, help=f"sessions per batch (default {DEFAULT_BATCH_SIZE})"
    )
    parser.add_argument(
        "--gamma", type=int, help=f"draft tokens per block (default {DEFAULT_GAMMA})"
    )
    parser.add_argument(
        "--plan",
        metavar="SCENARIO",
        help="plan the batches and gamma with the planner of this pipeline: scenario (the "
        "simulator's form, system: drafting_server; a file or a bundled scenario's name, as "
        "edgespec sim takes it: zhu-pipeline): its planner, costs and cell plan the "
        "sessions' prompt lengths and --max-new-tokens budgets; no radio here, every session "
        "at 1 bit/s/Hz; pipelined as its planner.pipelined says unless --pipeline is given; "
        "not with --batch-size or --gamma",
    )


def _add_connection(parser: argparse.ArgumentParser) -> None:
    add_server_access_arguments(parser)
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=30.0,
        help="seconds the server has to answer each request (default 30; closing the "
        "sessions after a failure or an interrupt: at most 5); a verify call past it is sent "
        "again (the server goes on with its pass) until --progress-timeout-s",
    )
    parser.add_argument(
        "--progress-timeout-s",
        type=float,
        default=60.0,
        help="seconds a verify call is sent again for, from its first sending, while the "
        "server is busy with its pass (default 60; no sending waits past it); then the run "
        "fails",
    )
    parser.add_argument(
        "--client-id",
        default=default_client_id(),
        help="the client id its sessions are opened under (default "
        "drafting-server-<pid>-<8 random hex>: one of this process alone), which the "
        "server's per-client session quota counts when it has no auth; with auth it counts "
        "per --auth-token, so processes sharing a token share one quota",
    )


def check_flags(args: argparse.Namespace) -> None:
    """:class:`ConfigError` naming the first bad flag (before any model loads); fills in
    ``--num-sessions`` when not given (the --prompt-ids given, else 8) and ``--split``."""
    from edgespec.config import ConfigError
    from edgespec.runtime.validation import client_id_problem

    if args.prompt_ids and args.num_sessions is not None:
        raise ConfigError("num_sessions", "the sessions are the --prompt-ids given (one each): "
                          "drop --num-sessions")  # fmt: skip
    if args.prompt_ids and args.split is not None:
        raise ConfigError("split", "the prompts are the --prompt-ids given, not a dataset's: "
                          "drop --split")  # fmt: skip
    args.split = "test" if args.split is None else args.split
    if args.num_sessions is None:
        args.num_sessions = len(args.prompt_ids) if args.prompt_ids else DEFAULT_SESSIONS
    _check_plan_flags(args)
    check_tls_name(args)
    for name in ("num_sessions", "batch_size", "gamma", "max_new_tokens"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ConfigError(name, f"must be >= 1, got {getattr(args, name)}")
    if args.num_sessions > MAX_SESSIONS:
        raise ConfigError("num_sessions", f"must be <= {MAX_SESSIONS:,}, got {args.num_sessions}")
    check_batch_size("batch_size", args.batch_size)
    if args.max_new_tokens >= UINT32_LIMIT:
        raise ConfigError(
            "max_new_tokens", f"must be below 2**32 (the wire's uint32), got {args.max_new_tokens}"
        )
    for name in ("timeout_s", "progress_timeout_s"):
        value = getattr(args, name)
        if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
            raise ConfigError(name, f"must be in (0, {MAX_TIMEOUT_S:g}], got {value:g}")
    told = "its session ids' '-<8 hex>-<index>'"
    if (problem := client_id_problem(args.client_id, len(SESSION_SUFFIX), told)) is not None:
        raise ConfigError("client_id", problem)
    if args.compare and args.pipeline is not None:
        raise ConfigError("pipeline", "--compare runs both: drop --pipeline/--no-pipeline")
    if args.draft == "ngram":
        raise ConfigError("draft", "the drafting server hosts a draft model, not 'ngram'")


def _check_plan_flags(args: argparse.Namespace) -> None:
    """``--plan`` picks the batches and γ: ``--batch-size`` or ``--gamma`` beside it is an
    error, and its planning is bounded as the simulator's (:data:`MAX_USERS` sessions);
    without it, the two get their defaults."""
    from edgespec.config import ConfigError
    from edgespec.hardware.drafting_plan import MAX_USERS
    from edgespec.policies.drafting_server.planner import MAX_OUTPUT_LEN

    if args.plan is None:
        args.batch_size = DEFAULT_BATCH_SIZE if args.batch_size is None else args.batch_size
        args.gamma = DEFAULT_GAMMA if args.gamma is None else args.gamma
        return
    for flag in ("batch_size", "gamma"):
        if getattr(args, flag) is not None:
            raise ConfigError(flag, f"--plan's planner picks it: drop --{flag.replace('_', '-')}")
    if args.num_sessions > MAX_USERS:
        raise ConfigError(
            "num_sessions",
            f"must be <= {MAX_USERS:,} with --plan (planning grows with the square of the "
            f"sessions), got {args.num_sessions}",
        )
    if args.max_new_tokens > MAX_OUTPUT_LEN:
        raise ConfigError(
            "max_new_tokens",
            f"must be <= {MAX_OUTPUT_LEN:,} with --plan (the planner plans every session for "
            f"its budget; its tables grow with it), got {args.max_new_tokens}",
        )


def check_batch_size(name: str, size: int | None) -> None:
    """A batch's calls go out at once on one gRPC connection, which carries at most
    ``MAX_CONCURRENT_STREAMS`` (256) at once: more had some refused ``UNAVAILABLE``
    (REFUSED_STREAM); ``ConfigError`` naming ``name``."""
    from edgespec.config import ConfigError
    from edgespec.runtime.wire.grpc_limits import MAX_CONCURRENT_STREAMS

    if size is not None and size > MAX_CONCURRENT_STREAMS:
        raise ConfigError(name, f"must be <= {MAX_CONCURRENT_STREAMS}, the calls one gRPC "
                          "connection carries at once (a batch's go out together), got "
                          f"{size}")  # fmt: skip
