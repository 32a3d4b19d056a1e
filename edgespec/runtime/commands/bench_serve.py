"""``edgespec bench serve``: load a verification server with N drafting clients and report
goodput, TTFT / TPOT / end-to-end percentiles, SLO attainment per class, errors by gRPC
code and lost sessions; ``--faults`` kills client processes and restarts the server at set
times; every finished output is checked against centralized decoding (docs/RUNTIME.md,
"Load generator"; the figures in docs/PERFORMANCE.md).

The server is either one the user runs (``--server HOST:PORT``, ``--metrics-url`` for its
Prometheus page) or one the bench starts (``edgespec serve`` as a child process on a free
loopback port, its Prometheus endpoint on): ``--target synthetic`` (default) builds a
synthetic Llama in a temporary directory, so no download is needed."""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.argument_types import (
    positive_int,
    seed_int,
    synthetic_hidden,
    synthetic_layers,
    torch_threads,
)
from edgespec.arguments import add_max_new_tokens
from edgespec.datasets.prompts import PROMPT_SETS
from edgespec.errors import UserInputError
from edgespec.output_paths import output_file, writable_output_folder
from edgespec.policies.registry import BATCHING
from edgespec.runtime.commands.sampling_arguments import add_sampling_arguments, sampling_from_flags
from edgespec.runtime.commands.serve_arguments import add_wisp_arguments, wisp_params
from edgespec.runtime.commands.serve_target import BACKENDS
from edgespec.runtime.commands.server_access_arguments import (
    add_server_access_arguments,
    check_tls_name,
)
from edgespec.runtime.loadgen.spec import (
    LoadSpec,
    check_own_server_classes,
    parse_faults,
    parse_modes,
    parse_slo_mix,
)
from edgespec.server_access_types import server_address

if TYPE_CHECKING:
    from edgespec.runtime.loadgen.report import LoadReport

DEFAULT_SLO_MIX = "interactive:20:0.5,batch:5:0.5"
SERVER_SLO_MIX = "default:none:1"  # the class every server knows
DEFAULT_MAX_QUEUED = 64
# the flags that set the bench's own server, and their defaults: refused with --server
OWN_SERVER_DEFAULTS: dict[str, Any] = {
    "target": "synthetic", "synthetic_layers": 12, "synthetic_hidden": 512,
    "backend": "transformers", "batching": "fcfs", "profile": None, "guard_ms": None,
    "server_threads": 1,
    "session_timeout_s": 15.0, "log_dir": None,
}  # fmt: skip
WISP_NEEDS = ("--batching wisp needs --profile NAME_OR_FILE: WISP's Eq. 19 coefficients from a "
              "'kind: wisp' profile (a bundled name such as a100-qwen3-32b, or the YAML "
              "'edgespec profile --out' writes)")  # fmt: skip
"""What the bench says of ``--batching wisp`` without ``--profile`` (its own server's
config takes no coefficients: the profile is the one way to give them)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    where = p.add_argument_group("the server")
    where.add_argument(
        "--server",
        metavar="HOST:PORT",
        type=server_address,
        help="a running server (default: start one)",
    )
    add_server_access_arguments(where)  # with --server only: the bench's own is plaintext
    where.add_argument("--metrics-url", help="its Prometheus page, e.g. http://HOST:9100/metrics")
    where.add_argument(
        "--target", help="model the bench's own server serves: 'synthetic' "
        "(default, built here: --synthetic-layers, --synthetic-hidden), a name or a directory",
    )  # fmt: skip
    where.add_argument("--synthetic-layers", type=synthetic_layers, help="(default 12; at most 32)")
    where.add_argument(
        "--synthetic-hidden",
        type=synthetic_hidden,
        help="(default 512; a multiple of 8, at most 2048)",
    )
    where.add_argument("--backend", choices=BACKENDS,
                       help="what runs the bench server's target (default transformers; "
                       "llamacpp needs a GGUF --target, e.g. gemma3-270m)")  # fmt: skip
    where.add_argument("--batching", help=f"its batching policy, one of "
                       f"{', '.join(sorted(BATCHING))} (default fcfs, the papers' order; "
                       "edgespec serve's own default is decodes-first)")  # fmt: skip
    add_wisp_arguments(where)
    where.add_argument(
        "--server-threads", type=torch_threads, help="its torch threads (default 1; at most 256)"
    )
    where.add_argument(
        "--session-timeout-s", type=float,
        help="the bench server's idle-session timeout (default 15: a killed client's sessions "
        "are reclaimed within the run)",
    )  # fmt: skip
    load = p.add_argument_group("the load")
    load.add_argument(
        "--mode", default="distributed",
        help="distributed (default: the clients draft, the server verifies), centralized (the "
        "server decodes alone), or both comma-separated: run one after the other, same server",
    )  # fmt: skip
    load.add_argument(
        "--clients", type=positive_int, default=8, help="concurrent clients (default 8)"
    )
    load.add_argument("--procs", type=positive_int, help="client processes (default min(4, N))")
    load.add_argument("--arrivals", choices=("closed", "poisson"), default="closed",
                      help="closed loop (default) or Poisson at --rate")  # fmt: skip
    load.add_argument("--rate", type=float, help="Poisson arrivals per second (all clients)")
    load.add_argument(
        "--max-queued", type=int, help="Poisson: arrivals waiting for a free client, per client "
        f"process; one more is dropped (default {DEFAULT_MAX_QUEUED})",
    )  # fmt: skip
    load.add_argument(
        "--duration-s", type=float, default=30.0, help="arrivals stop then (default 30)"
    )
    load.add_argument(
        "--drain-s", type=float, default=60.0,
        help="then the requests in flight get this long; one still running is lost (default 60)",
    )  # fmt: skip
    load.add_argument(
        "--slo-mix", help="NAME:TOKENS_PER_S:SHARE,..., the shares rescaled to sum to 1 "
        f"(default {DEFAULT_SLO_MIX}, which the bench's own server is given; with --server, "
        f"{SERVER_SLO_MIX}: its classes are its own)",
    )  # fmt: skip
    load.add_argument("--prompts", default="general", choices=PROMPT_SETS, metavar="SET",
                      help="bundled prompt set: general (default), gsm8k, cnndm, humaneval, "
                      "sharegpt (test split)")  # fmt: skip
    load.add_argument("--max-prompt-tokens", type=positive_int, default=256, help="(default 256)")
    add_max_new_tokens(p, 32)
    load.add_argument("--gamma", type=positive_int, default=4, help="static window (default 4)")
    load.add_argument("--draft", default="ngram",
                      help="ngram (default), truncated (synthetic target) or a model")  # fmt: skip
    load.add_argument("--seed", type=seed_int, default=0, help="prompt and class draws (default 0)")
    add_sampling_arguments(
        p.add_argument_group("sampling (every request's; each draws its own seed)"),
        config=False, seed=False,
    )  # fmt: skip
    load.add_argument(
        "--faults", default="",
        help="KIND@SECONDS[:COUNT],... KIND kill-clients (COUNT processes) or restart-server "
        "(default: none)",
    )  # fmt: skip
    out = p.add_argument_group("output")
    out.add_argument("--no-check", action="store_true", help="skip the centralized check")
    out.add_argument(
        "--json", type=output_file, metavar="FILE", help="also write the report as JSON"
    )
    out.add_argument(
        "--log-dir", type=writable_output_folder, metavar="DIR",
        help="where the bench's own server's log goes (default: a temporary folder)",
    )  # fmt: skip


def load_spec(args: argparse.Namespace) -> LoadSpec:
    procs = args.procs if args.procs is not None else min(4, args.clients)
    mix = args.slo_mix
    if mix is None:
        mix = DEFAULT_SLO_MIX if args.server is None else SERVER_SLO_MIX
    max_queued = args.max_queued
    if max_queued is None and args.arrivals == "poisson":
        max_queued = DEFAULT_MAX_QUEUED
    return LoadSpec(args.clients, procs, args.arrivals, args.rate, args.duration_s,
                    args.drain_s, parse_slo_mix(mix), args.max_new_tokens, args.gamma,
                    args.draft, args.seed, parse_faults(args.faults), max_queued=max_queued,
                    sampling=sampling_from_flags(args, args.max_new_tokens))  # fmt: skip


def own_server_args(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the own server's flags at their defaults where not given; with
    ``--server`` any of them given is a :class:`UserInputError` (they set nothing there),
    and so is ``--metrics-url`` without it (the bench's own server has its own page)."""
    given = [k for k in OWN_SERVER_DEFAULTS if getattr(args, k) is not None]
    if args.server is not None and given:
        flag = "--" + given[0].replace("_", "-")
        raise UserInputError(f"{flag} sets the bench's own server (no --server)")
    if args.server is None and args.metrics_url is not None:
        raise UserInputError("--metrics-url is for a --server of yours (the bench's own server's "
                             "page is read without it)")  # fmt: skip
    defaults = {k: v for k, v in OWN_SERVER_DEFAULTS.items() if k not in given}
    resolved = argparse.Namespace(**(vars(args) | defaults))
    timeout = resolved.session_timeout_s
    if not (math.isfinite(timeout) and timeout > 0):
        raise UserInputError(f"--session-timeout-s must be a finite number > 0, got {timeout:g}")
    return resolved


def check_batching(args: argparse.Namespace) -> None:
    """``--batching`` and ``--profile`` checked as the bench's own server will check them
    (:func:`~edgespec.runtime.server.batching.build_batching`, ``edgespec serve``'s one
    check), before it starts: a mistake names the flag (it was the server's exit 2, after
    the target was built, advising a config field the bench cannot set)."""
    from edgespec.config import PolicySpec, named_by_flags
    from edgespec.runtime.server.batching import build_batching

    if args.batching == "wisp" and args.profile is None:
        raise UserInputError(WISP_NEEDS)
    if args.batching != "wisp" and args.profile is not None:
        raise UserInputError(f"--profile configures the wisp batching policy; --batching is "
                             f"{args.batching!r} (add --batching wisp)")  # fmt: skip
    params = {key: value for key, value in wisp_params(args).items() if value is not None}
    with named_by_flags({"batching.name": "--batching", "batching.params.profile": "--profile",
                         "batching.params.guard_s": "--guard-ms"}):  # fmt: skip
        build_batching(PolicySpec(args.batching, params))


def _check_draft(args: argparse.Namespace) -> None:
    """A model ``--draft`` resolves here, before any server starts (as ``edgespec draft``)."""
    if args.draft in ("ngram", "truncated"):
        return
    from edgespec.models.registry import resolve_model

    try:
        resolve_model(args.draft)
    except UserInputError as exc:
        raise UserInputError(f"--draft: {exc}") from None


def _say(line: str) -> None:
    print(f"edgespec bench serve: {line}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the load; a refused input is one line, exit 2 (a Prometheus page that cannot be
    read too), and a server that refuses the bench's own calls (health, vocabulary, the
    check) one line, exit 1, as ``edgespec draft`` says it. SIGTERM stops it as Ctrl-C
    does: its client processes and its own server stopped, one line (``terminated``,
    ``interrupted``), exit 143 (130). These lines begin ``edgespec bench serve:``, as its
    progress lines and usage errors do (a refused input's, from :func:`edgespec.cli.main`)."""
    from edgespec.runtime.errors import RequestError

    try:  # SIGTERM and Ctrl-C are cli.main's, its processes stopped on the way out
        return _run(args)
    except RequestError as exc:
        print(exc.client_line("bench serve"), file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    args = own_server_args(args)
    load = load_spec(args)
    modes = parse_modes(args.mode)
    if args.server is None:
        check_own_server_classes(load.slo_mix)
    if args.server is not None and any(f.kind == "restart-server" for f in load.faults):
        raise UserInputError("--faults restart-server needs the bench's own server (no --server)")
    if args.draft == "truncated" and (args.server is not None or args.target != "synthetic"):
        raise UserInputError("--draft truncated is the synthetic target's first 2 layers: it "
                             "needs the bench's own --target synthetic")  # fmt: skip
    secured = [f for f in ("auth_token", "tls_ca", "tls_server_name") if getattr(args, f)]
    if args.server is None and secured:
        flag = "--" + secured[0].replace("_", "-")
        raise UserInputError(f"{flag} is for a --server of yours (the bench's own is plaintext)")
    check_tls_name(args)
    if args.server is None:
        check_batching(args)
    _check_draft(args)
    from edgespec.runtime.loadgen.session import BenchSession

    with tempfile.TemporaryDirectory(prefix="edgespec-bench-") as tmp:
        reports = BenchSession(args, load, Path(tmp), _say).run(modes)
    return _report(args, modes, reports)


def _report(
    args: argparse.Namespace, modes: tuple[str, ...], reports: tuple[LoadReport, ...]
) -> int:
    """Print the reports (and write the JSON); exit 1 when a request was lost, an output
    mismatched, the centralized check failed or every request of a mode failed (then one
    line says so)."""
    from edgespec.output_paths import write_text_atomically
    from edgespec.runtime.loadgen.report import all_failed_line, markdown, summary

    print("\n\n".join(markdown(r) for r in reports))
    result = summary(reports)
    if len(reports) > 1:
        ratio = result["goodput_ratio"]  # None: the second mode had no goodput to divide by
        shown = f"{ratio:.2f}" if ratio is not None else f"n/a ({modes[1]}: no goodput)"
        print(f"\ngoodput {' / '.join(modes)}: {shown}")
    if args.json is not None:  # its folder was found writable when the flags were read
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(args.json, json.dumps(result, indent=2, allow_nan=False) + "\n")
        _say(f"wrote {args.json}")
    if (line := all_failed_line(reports)) is not None:
        _say(line)
        return 1
    for mode, report in zip(modes, reports, strict=True):
        if report.check is not None and report.check.failure is not None:
            _say(f"{mode}: the centralized check failed: {report.check.failure}")
            return 1
    bad = sum(len(r.outcome.lost) + (len(r.check.mismatches) if r.check else 0) for r in reports)
    return 1 if bad else 0
