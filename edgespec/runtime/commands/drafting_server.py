"""``edgespec drafting-server``: one process hosting a draft model drafts for several
sessions in batches and sends their blocks to an ``edgespec serve``, pipelined or not
(:mod:`edgespec.runtime.edge.drafting_server`); ``--compare`` runs both on the same prompts."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from edgespec.argument_types import token_ids
from edgespec.arguments import add_device_arguments, add_threads, add_verbose
from edgespec.output_paths import output_file

WARMUP_TOKENS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", required=True, help="host:port of an edgespec serve")
    parser.add_argument(
        "--draft", required=True, help="draft model (HF directory or name, e.g. gemma3-270m-draft)"
    )
    prompts = parser.add_mutually_exclusive_group()
    prompts.add_argument(
        "--prompts",
        default="gsm8k",
        help="prompt dataset, one prompt per session (gsm8k, cnndm, humaneval, general; "
        "default gsm8k; tokenized with the draft's or the server's target's tokenizer)",
    )
    prompts.add_argument(
        "--prompt-ids",
        type=token_ids,
        action="append",
        metavar="IDS",
        help="one session's comma-separated prompt token ids (repeat: one per session)",
    )
    parser.add_argument("--split", default="test", help="dataset split (default test)")
    parser.add_argument(
        "--num-sessions", type=int, default=8, help="sessions (prompts) with --prompts (default 8)"
    )
    parser.add_argument("--batch-size", type=int, default=4, help="sessions per batch (default 4)")
    parser.add_argument("--gamma", type=int, default=4, help="draft tokens per block (default 4)")
    parser.add_argument(
        "--max-new-tokens", type=int, default=32, help="tokens per session (default 32)"
    )
    parser.add_argument(
        "--pipeline",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="draft the next batch while the previous one verifies (default: pipelined)",
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
    parser.add_argument("--auth-token", help="token the server accepts (default: none)")
    parser.add_argument("--tls-ca", metavar="PEM", help="connect over TLS with this CA file")
    add_device_arguments(parser, "the draft model")
    add_threads(parser, None)
    add_verbose(parser)


def check_flags(args: argparse.Namespace) -> None:
    """:class:`ConfigError` naming the first bad flag (before any model loads)."""
    from edgespec.config import ConfigError

    for name in ("num_sessions", "batch_size", "gamma", "max_new_tokens"):
        if getattr(args, name) < 1:
            raise ConfigError(name, f"must be >= 1, got {getattr(args, name)}")
    if args.compare and args.pipeline is not None:
        raise ConfigError("pipeline", "--compare runs both: drop --pipeline/--no-pipeline")
    if args.draft == "ngram":
        raise ConfigError("draft", "the drafting server hosts a draft model, not 'ngram'")


def run(args: argparse.Namespace) -> int:
    """Run (or ``--compare``) the drafting server; a request the server refuses is one
    line on stderr, exit 1."""
    from edgespec.runtime.errors import RequestError

    check_flags(args)
    try:
        return _run(args)
    except RequestError as exc:
        print(exc.client_line("drafting-server"), file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    import torch

    from edgespec.config import ConfigError
    from edgespec.models.devices import device_placement
    from edgespec.models.loading import load_model
    from edgespec.runtime.edge.batched_draft import BatchedDraftModel
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    placement = device_placement(args)  # a GPU this machine lacks: before the server
    verifier = RemoteVerifier(args.server, args.auth_token, args.tls_ca)
    limit = verifier.max_draft_tokens()  # reaches the server before anything loads
    if limit is not None and args.gamma > limit:
        raise ConfigError("gamma", f"{args.gamma} exceeds the server's max_draft_tokens {limit}")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    loaded = load_model(args.draft, placement.dtype, verbose=args.verbose, device=placement.device)
    prompts = _prompts(args, verifier, loaded.tokenizer)
    draft = BatchedDraftModel(loaded.model)
    runs = _runs(args, verifier, draft, prompts)
    return _report(args, runs, prompts)


def _report(
    args: argparse.Namespace,
    runs: dict[str, tuple[Any, dict[str, int]]],
    prompts: list[tuple[int, ...]],
) -> int:
    """The stats lines (and with ``--compare`` the speed-up), ``--json``; exit status 1
    when the compared outputs differ."""
    report: dict[str, Any] = {"settings": _settings(args, prompts), "runs": {}}
    for name, (result, server) in runs.items():
        print(_stats_line(result, len(prompts), server), file=sys.stderr)
        report["runs"][name] = {**result.summary(), **server}
    same = True
    if args.compare:
        plain, piped = runs["not_pipelined"][0], runs["pipelined"][0]
        same = plain.output_token_ids == piped.output_token_ids
        ratio = piped.tokens_per_s / max(plain.tokens_per_s, 1e-12)
        report.update(speedup=ratio, identical=same)
        print(
            f"pipelined {piped.tokens_per_s:.1f} tok/s vs not pipelined "
            f"{plain.tokens_per_s:.1f} tok/s: {ratio:.2f}x; outputs "
            + ("identical" if same else "DIFFER"),
            file=sys.stderr,
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0 if same else 1


def _runs(
    args: argparse.Namespace, verifier: Any, draft: Any, prompts: list[tuple[int, ...]]
) -> dict[str, tuple[Any, dict[str, int]]]:
    """A warm-up (one batch, a few tokens, untimed), then the run(s) asked for, each with
    the server's batch counts during it."""
    from edgespec.runtime.edge.drafting_server import run_drafting_server

    def once(pipelined: bool, sessions: list[tuple[int, ...]], new_tokens: int) -> Any:
        return run_drafting_server(
            verifier, draft, sessions, batch_size=args.batch_size, gamma=args.gamma,
            max_new_tokens=new_tokens, pipelined=pipelined,
        )  # fmt: skip

    once(False, prompts[: args.batch_size], min(WARMUP_TOKENS, args.max_new_tokens))
    runs = {}
    for pipelined in [False, True] if args.compare else [args.pipeline is not False]:
        before = verifier.stats()
        result = once(pipelined, prompts, args.max_new_tokens)
        after = verifier.stats()
        server = {
            "server_batches": after.num_batches - before.num_batches,
            "server_tokens_forwarded": after.num_tokens_forwarded - before.num_tokens_forwarded,
        }
        runs["pipelined" if pipelined else "not_pipelined"] = (result, server)
    return runs


def _prompts(args: argparse.Namespace, verifier: Any, tokenizer: Any) -> list[tuple[int, ...]]:
    """``--prompt-ids``, else ``--num-sessions`` prompts of ``--prompts`` (in turn when the
    dataset has fewer), tokenized."""
    from edgespec.config import ConfigError
    from edgespec.datasets.prompts import load_prompts
    from edgespec.models.loading import load_tokenizer

    if args.prompt_ids:
        return list(args.prompt_ids)
    try:
        texts = [p.text for p in load_prompts(args.prompts, args.split, args.num_sessions)]
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError("prompts", str(exc)) from None
    if not texts:
        raise ConfigError("prompts", f"dataset {args.prompts!r} has no {args.split} prompts")
    if tokenizer is None:
        target = verifier.target_name()
        tokenizer = load_tokenizer(target, args.verbose) if target else None
    if tokenizer is None:
        raise ConfigError("prompts", "no tokenizer (the draft has none, nor the server's "
                          "target here): give --prompt-ids")  # fmt: skip
    ids = [tuple(tokenizer(text)["input_ids"]) for text in texts]
    return [ids[k % len(ids)] for k in range(args.num_sessions)]


def _settings(args: argparse.Namespace, prompts: list[tuple[int, ...]]) -> dict[str, Any]:
    import torch

    return {
        "server": args.server,
        "draft": args.draft,
        "prompts": "prompt-ids" if args.prompt_ids else f"{args.prompts}/{args.split}",
        "num_sessions": len(prompts),
        "prompt_tokens": [len(p) for p in prompts],
        "batch_size": args.batch_size,
        "gamma": args.gamma,
        "max_new_tokens": args.max_new_tokens,
        "warmup": f"one batch, {min(WARMUP_TOKENS, args.max_new_tokens)} tokens, untimed",
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
    }


def _stats_line(result: Any, num_sessions: int, server: dict[str, int]) -> str:
    mode = "pipelined" if result.pipelined else "not pipelined"
    return (
        f"[{mode}: {num_sessions} sessions in batches of {result.batch_size}, "
        f"{result.num_output_tokens} tokens, {result.tokens_per_s:.1f} tok/s, wall "
        f"{result.wall_s:.2f}s; {result.num_steps} steps, {result.num_draft_passes} draft "
        f"passes, draft {result.draft_s:.2f}s, verify wait {result.verify_wait_s:.2f}s, "
        f"{result.accepted_per_round:.2f} accepted per round; server: "
        f"{server['server_batches']} batches]"
    )
