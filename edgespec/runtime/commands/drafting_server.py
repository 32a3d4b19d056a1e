"""``edgespec drafting-server``: one process hosting a draft model drafts for several
sessions in batches and sends their blocks to an ``edgespec serve``, pipelined or not
(:mod:`edgespec.runtime.edge.drafting_server`); ``--compare`` runs both on the same prompts.
The batches and γ are ``--batch-size`` and ``--gamma``'s, or the plan of ``--plan``'s
planner (:mod:`edgespec.runtime.commands.drafting_server_plan`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically
from edgespec.runtime.commands.cpus import apply_cpus_and_threads
from edgespec.runtime.commands.drafting_server_arguments import (
    add_arguments,
    check_batch_size,
    check_flags,
)
from edgespec.runtime.commands.stages import Stages

__all__ = ["add_arguments", "check_flags", "run"]

WARMUP_TOKENS = 4
CLOSE_TIMEOUT_S = 5.0
"""The most seconds each session's close may take (at most ``--timeout-s``): after a server
stopped answering, the sessions are closed (all at once) within this, not another timeout."""


def run(args: argparse.Namespace) -> int:
    """Run (or ``--compare``) the drafting server; a request the server refuses is one
    line on stderr, exit 1. SIGTERM stops it as Ctrl-C does: its sessions on the server
    are closed, one line on stderr, exit 128 + the signal's number (143, 130)."""
    from edgespec.runtime.commands.drafting_server_plan import load_plan_flag
    from edgespec.runtime.edge.progress import shorter_budget_warning
    from edgespec.runtime.errors import RequestError

    check_flags(args)
    line = shorter_budget_warning(args.progress_timeout_s, args.timeout_s,
                                  "--progress-timeout-s", "--timeout-s")  # fmt: skip
    if line is not None:
        print(f"edgespec drafting-server: {line}", file=sys.stderr)
    planning = load_plan_flag(args.plan)  # before the server is asked
    try:  # SIGTERM and Ctrl-C are cli.main's, once the sessions are closed
        return _run(args, planning)
    except RequestError as exc:
        print(exc.client_line("drafting-server"), file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, planning: Any) -> int:
    from edgespec.config import ConfigError
    from edgespec.models.devices import device_placement
    from edgespec.models.loading import load_model
    from edgespec.runtime.commands.drafting_server_plan import (
        check_pipelined_calls,
        check_server_limit,
        plan_line,
        plan_run,
    )
    from edgespec.runtime.commands.drafting_server_profiles import model_warnings, range_warnings
    from edgespec.runtime.edge.batched_draft import BatchedDraftModel
    from edgespec.runtime.edge.draft_backends import check_draft_vocab
    from edgespec.runtime.edge.drafting_sessions import check_sessions
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    placement = device_placement(args)  # a GPU this machine lacks: before the server
    close_s = min(CLOSE_TIMEOUT_S, args.timeout_s)
    verifier = RemoteVerifier(args.server, args.auth_token, args.tls_ca, args.timeout_s,
                              tls_server_name=args.tls_server_name,
                              close_timeout_s=close_s)  # fmt: skip
    limit = verifier.max_draft_tokens()  # reaches the server before anything loads
    if limit is not None and args.gamma is not None and args.gamma > limit:
        raise ConfigError("gamma", f"{args.gamma} exceeds the server's max_draft_tokens {limit}")
    if planning is not None:
        check_server_limit(planning, limit)
        _warn(model_warnings(planning.system, args.draft, verifier.target_name()))
    check_pipelined_calls(args, planning)
    apply_cpus_and_threads(args.cpus, args.threads)
    say = Stages("drafting-server")  # minutes of work otherwise silent until the stats lines
    say(f"loading the draft {args.draft}")
    loaded = load_model(args.draft, placement.dtype, verbose=args.verbose, device=placement.device)
    check_draft_vocab(args.draft, loaded.model, verifier.vocab_size())
    draft = BatchedDraftModel(loaded.model)
    prompts = _prompts(args, verifier, loaded.tokenizer)
    check_sessions(verifier, prompts, args.max_new_tokens, args.client_id)  # before the warm-up
    plan = None
    if planning is not None:
        budgets = [args.max_new_tokens] * len(prompts)
        plan = plan_run(planning, prompts, budgets, limit)
        check_batch_size("plan", max(len(batch) for batch in plan.batches))
        print(plan_line(planning, plan), file=sys.stderr)  # before the warm-up and the runs
        _warn(range_warnings(planning, plan, prompts, budgets))
    runs = _runs(args, verifier, draft, prompts, (planning, plan), say)
    return _report(args, runs, prompts, (planning, plan))


def _warn(lines: list[str]) -> None:
    """``--plan``'s warnings (its profiles against the models and the plan), on stderr."""
    for line in lines:
        print(f"edgespec drafting-server: {line}", file=sys.stderr)


def _report(
    args: argparse.Namespace,
    runs: dict[str, tuple[Any, dict[str, int]]],
    prompts: list[tuple[int, ...]],
    planned: tuple[Any, Any],
) -> int:
    """The stats lines (with ``--plan``, each against the plan; with ``--compare`` the
    speed-up), ``--json``; exit status 1 when the compared outputs differ."""
    from edgespec.runtime.commands.drafting_server_plan import (
        batch_sizes,
        comparison_text,
        plan_comparison,
        plan_record,
    )

    report: dict[str, Any] = {"settings": _settings(args, prompts), "runs": {}}
    planning, plan = planned
    if plan is not None:
        report["settings"]["plan"] = plan_record(planning, plan)
    for name, (result, server) in runs.items():
        report["runs"][name] = {**result.summary(), **server}
        batches, against = str(result.batch_size), ""
        if plan is not None:
            budgets = [args.max_new_tokens] * len(prompts)
            compared = plan_comparison(planning, plan, budgets, result)
            report["runs"][name]["plan"] = compared
            batches = batch_sizes(plan)
            against = "; " + comparison_text(compared, result, plan.spec_len)
        print(_stats_line(result, len(prompts), server, batches, against), file=sys.stderr)
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
        write_text_atomically(Path(args.json), json.dumps(report, indent=2) + "\n")
    return 0 if same else 1


def _runs(
    args: argparse.Namespace,
    verifier: Any,
    draft: Any,
    prompts: list[tuple[int, ...]],
    planned: tuple[Any, Any],
    say: Callable[[str], None] = lambda stage: None,
) -> dict[str, tuple[Any, dict[str, int]]]:
    """A warm-up (the first batch, a few tokens, untimed), then the run(s) asked for, each
    with the server's batch counts during it; with ``--plan``, in the plan's batches and γ.
    ``say``: told each as it starts."""
    from edgespec.runtime.commands.drafting_server_plan import run_pipelined
    from edgespec.runtime.edge.drafting_server import run_drafting_server

    def once(
        pipelined: bool, sessions: list[tuple[int, ...]], new_tokens: int, **order: Any
    ) -> Any:
        return run_drafting_server(
            verifier, draft, sessions, max_new_tokens=new_tokens, pipelined=pipelined,
            client_id=args.client_id, progress_timeout_s=args.progress_timeout_s,
            on_resend=_resend_notice(args.progress_timeout_s), **order,
        )  # fmt: skip

    planning, plan = planned
    first = plan.batches[0] if plan is not None else range(min(args.batch_size, len(prompts)))
    gamma = plan.spec_len if plan is not None else args.gamma
    warm_tokens = min(WARMUP_TOKENS, args.max_new_tokens)
    say(f"warming up (one batch of {len(first)}, {warm_tokens} tokens, untimed)")
    once(False, [prompts[k] for k in first], warm_tokens, batch_size=len(first), gamma=gamma)
    order = {"plan": plan} if plan is not None else {"batch_size": args.batch_size, "gamma": gamma}
    runs = {}
    for pipelined in [False, True] if args.compare else [run_pipelined(args, planning)]:
        say(f"running {'pipelined' if pipelined else 'not pipelined'}: {len(prompts)} sessions, "
            f"up to {args.max_new_tokens} new tokens each")  # fmt: skip
        before = verifier.stats()
        result = once(pipelined, prompts, args.max_new_tokens, **order)
        after = verifier.stats()
        server = {
            "server_batches": after.num_batches - before.num_batches,
            "server_tokens_forwarded": after.num_tokens_forwarded - before.num_tokens_forwarded,
        }
        runs["pipelined" if pipelined else "not_pipelined"] = (result, server)
    return runs


def _resend_notice(progress_timeout_s: float) -> Callable[[Any], None]:
    """What a run says on stderr, once, when its verify calls are past ``--timeout-s`` and
    sent again (it would be silent until its stats line otherwise)."""
    from edgespec.config.overrides import shown

    lock, told = threading.Lock(), [False]

    def notice(error: Any) -> None:
        with lock:
            if told[0]:
                return
            told[0] = True
        print(
            f"edgespec drafting-server: no answer within --timeout-s ({shown(str(error), 120)}):"
            " the server is busy, with a batch of long prompts' first pass, say; sending the "
            "calls again on their sessions (the server keeps its work), each for up to "
            f"{progress_timeout_s:g} s from its first sending (--progress-timeout-s)",
            file=sys.stderr,
        )

    return notice


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
        "client_id": args.client_id,
        "timeout_s": args.timeout_s,
        "progress_timeout_s": args.progress_timeout_s,
        "warmup": f"one batch, {min(WARMUP_TOKENS, args.max_new_tokens)} tokens, untimed",
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
    }


def _stats_line(
    result: Any, num_sessions: int, server: dict[str, int], batches: str, against: str
) -> str:
    """A run's stats, in ``batches`` (a size, or a plan's sizes), ``against`` its plan."""
    mode = "pipelined" if result.pipelined else "not pipelined"
    passes = server["server_batches"]
    resends = result.num_resends
    if resends:  # calls past --timeout-s: the server was busy with their pass
        against += f"; {resends} call{'' if resends == 1 else 's'} sent again past --timeout-s"
    return (
        f"[{mode}: {num_sessions} sessions in batches of {batches}, "
        f"{result.num_output_tokens} tokens, {result.tokens_per_s:.1f} tok/s, wall "
        f"{result.wall_s:.2f}s; {result.num_steps} steps, {result.num_draft_passes} draft "
        f"passes, draft {result.draft_s:.2f}s, verify wait {result.verify_wait_s:.2f}s, "
        f"{result.accepted_per_round:.2f} accepted per round; server: "
        f"{passes} batch{'' if passes == 1 else 'es'}{against}]"
    )
