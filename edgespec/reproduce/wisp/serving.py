"""WISP vs FCFS vs SLED on the real server: ``edgespec reproduce wisp-serving``.

For each system it starts ``edgespec serve --target MODEL`` (WISP: ``--batching wisp
--profile FILE --deadline-rule token_speed``; SLED: ``--no-prefix-cache``) and runs
``--clients`` drafter *processes* (n-gram drafting, static γ = 4, greedy), each in a closed
loop over GSM8K test prompts for ``--seconds``, its SLO class taken round-robin from
``--classes``. It reports per system and class the attainment (requests whose achieved
token speed met the class), goodput and mean latency, and checks that every prompt's
output is identical in every system (lossless). Each server writes its round log
(``--round-log``, next to ``--out``: ``NAME-SYSTEM-rounds.jsonl``) and its output
(``NAME-SYSTEM-server.log``), and the report gives WISP's Eq. 21 attribution of the rounds
that missed their deadlines (:func:`attribution_summary`). Results go to ``--out`` as JSON.
A run stopped before it (an error, Ctrl-C, SIGTERM) ends its server and clients and removes
the round logs it wrote (:func:`written_files`); the servers' logs stay, to say what
happened (they block no rerun: ``--out`` is a file, replaced).

It fails fast, in one line: a ``--profile`` WISP's server would refuse, or ``--prompts``
beyond GSM8K's test split, before anything loads; a server that exits before it answers,
with its log's last lines and path; a client that fails (or dies), naming it and its error.
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from pathlib import Path
from typing import Any

from edgespec.argument_types import positive_int
from edgespec.arguments import (
    MAX_DRAFTER_PROCESSES,
    add_max_new_tokens,
    add_threads,
    drafter_processes,
)
from edgespec.config import ConfigError
from edgespec.errors import UserInputError
from edgespec.output_paths import output_file, write_text_atomically
from edgespec.reproduce.wisp.serving_clients import ClientPlan, run_clients
from edgespec.reproduce.wisp.serving_flags import MAX_SECONDS, class_targets, run_seconds, slo_class

SYSTEMS = {
    "fcfs": ["--batching", "fcfs"],
    "sled": ["--batching", "fcfs", "--no-prefix-cache"],
    "wisp": ["--batching", "wisp", "--deadline-rule", "token_speed"],
}


def round_log_path(out: Path, system: str) -> Path:
    """Where ``system``'s server writes its round log, next to the report ``out``."""
    return out.with_name(f"{out.stem}-{system}-rounds.jsonl")


def server_log_path(out: Path, system: str) -> Path:
    """Where ``system``'s server output (stdout and stderr) goes, next to the report."""
    return out.with_name(f"{out.stem}-{system}-server.log")


def written_files(out: Path) -> list[str]:
    """What a run writes beside the report ``out`` (its name too) that a run stopped before
    the report removes again (:func:`~edgespec.reproduce.folder.incomplete_run_removed`),
    as patterns relative to its folder: the report and the round logs, not the servers'
    logs."""
    paths = [out, *(round_log_path(out, s) for s in SYSTEMS)]
    return [glob.escape(path.name) for path in paths]


def attribution_summary(path: Path) -> dict[str, Any]:
    """Eq. 21 over a server's round log: rounds with a deadline, those that missed it, and
    how many of those were compute-dominant (ρ > 1.5 over the last 20 batches)."""
    from edgespec.metrics.attribution import attribute_violations
    from edgespec.runtime.server.round_log import read_round_log

    result = attribute_violations(read_round_log(path))
    return {
        "rounds_with_deadline": result.num_rounds_with_deadline,
        "violated": result.num_violated,
        "compute_dominant": result.num_compute_dominant,
        "compute_share": result.compute_share,
    }


def run_system(
    name: str, args: argparse.Namespace, prompts: list[list[int]]
) -> list[dict[str, Any]]:
    """``name``'s server on a free loopback port, its output in :func:`server_log_path`, and
    the clients against it; a server that does not come up names itself and its log."""
    from edgespec.runtime.loadgen.server_process import ServerProcess, free_port

    flags = [*SYSTEMS[name], "--round-log", str(round_log_path(args.out, name))]
    if name == "wisp":
        flags += ["--profile", args.profile]
    serve = ["--target", args.target, "--threads", str(args.threads), *flags,
             *[a for c in args.classes for a in ("--slo-class", c)]]  # fmt: skip
    log = server_log_path(args.out, name)
    log.unlink(missing_ok=True)  # this run's output only
    server = ServerProcess(serve, free_port(), log)
    try:
        try:
            server.start(300.0)
        except UserInputError as exc:
            raise UserInputError(f"{name}: {exc}") from None
        plan = ClientPlan(
            server.address,
            [c.split("=")[0] for c in args.classes],
            prompts,
            args.seconds,
            args.max_new_tokens,
        )
        try:
            return run_clients(plan, args.clients)
        except UserInputError as exc:
            raise UserInputError(f"{name}: {exc}") from None
    finally:
        server.stop()


def check_profile(profile: str) -> None:
    """``--profile`` loaded as the WISP server loads it (a bundled name or a ``kind: wisp``
    YAML): a missing, unreadable or other profile is a :class:`UserInputError` naming
    ``--profile``, before anything loads (the server would exit only after FCFS and SLED
    ran)."""
    from edgespec.hardware.wisp import wisp_batching_params

    try:
        wisp_batching_params({"profile": profile}, field="batching")
    except ConfigError as exc:
        raise UserInputError(f"--profile: {exc.message}") from None


def system_summary(
    rows: list[dict[str, Any]], classes: dict[str, float], seconds: float
) -> dict[str, Any]:
    per_class = {}
    for cls, target in classes.items():
        mine = [r for r in rows if r["class"] == cls]
        met = sum(1 for r in mine if r["tokens_per_s"] >= target)
        per_class[cls] = {
            "target_tokens_per_s": target,
            "requests": len(mine),
            "attainment": met / len(mine) if mine else None,
        }
    tokens = sum(len(r["tokens"]) for r in rows)
    return {
        "requests": len(rows),
        "goodput_tokens_per_s": tokens / seconds,
        "mean_e2e_s": sum(r["e2e_s"] for r in rows) / max(len(rows), 1),
        "classes": per_class,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target", default="gemma3-270m", help="served model (default gemma3-270m)"
    )
    parser.add_argument("--profile", required=True, help="kind: wisp profile of this machine")
    parser.add_argument(
        "--clients",
        type=drafter_processes,
        default=8,
        help=f"drafter processes, at most {MAX_DRAFTER_PROCESSES} (default 8)",
    )
    parser.add_argument(
        "--seconds",
        type=run_seconds,
        default=60.0,
        help=f"closed-loop run per system, s, from when every client is connected; at most "
        f"{MAX_SECONDS:,} (default 60)",
    )
    add_max_new_tokens(parser, 24)
    add_threads(parser, 2, "server torch threads")
    parser.add_argument(
        "--classes",
        nargs="+",
        default=["c1=0.5", "c2=1", "c3=2", "c4=3"],
        type=slo_class,
        metavar="NAME=TOKENS_PER_S",
        help="SLO classes and token-speed targets, tokens/s (default c1=0.5 c2=1 c3=2 c4=3)",
    )
    parser.add_argument(
        "--prompts",
        type=positive_int,
        default=24,
        help="first GSM8K test prompts used (default 24)",
    )
    parser.add_argument(
        "--out",
        type=output_file,
        default=Path("runs/wisp-serving.json"),
        help="JSON report; round logs go next to it (default runs/wisp-serving.json)",
    )


def run(args: argparse.Namespace) -> int:
    from edgespec.datasets.prompts import load_prompts
    from edgespec.models.loading import load_tokenizer
    from edgespec.reproduce.folder import incomplete_run_removed

    classes = class_targets(args.classes)
    check_profile(args.profile)
    available = [p.text for p in load_prompts("gsm8k", "test")]
    if args.prompts > len(available):
        raise UserInputError(
            f"--prompts: {args.prompts} asked for, but GSM8K's test split has "
            f"{len(available)} prompts"
        )
    texts = available[: args.prompts]
    tokenizer = load_tokenizer(args.target)
    if tokenizer is None:
        raise UserInputError(f"--target {args.target}: no tokenizer (the prompts are text)")
    prompts = [list(tokenizer(t)["input_ids"]) for t in texts]
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    outputs: dict[int, list[int]] = {}
    lossless = True
    with incomplete_run_removed(args.out.parent, written_files(args.out), args.out.name):
        for name in SYSTEMS:
            rows = run_system(name, args, prompts)
            for r in rows:
                if outputs.setdefault(r["prompt"], r["tokens"]) != r["tokens"]:
                    lossless = False
            report[name] = system_summary(rows, classes, args.seconds)
            report[name]["attribution"] = attribution_summary(round_log_path(args.out, name))
            print(name, json.dumps(report[name]), flush=True)
        report["identical_outputs_across_systems"] = lossless
        report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        write_text_atomically(args.out, json.dumps(report, indent=2) + "\n")
    print("identical outputs across systems:", lossless)
    return 0
