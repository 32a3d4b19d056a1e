"""AWC vs Static vs Dynamic on the real pair, over an emulated link:
``edgespec reproduce dsd-real-pair``.

It starts ``edgespec serve --target T --draft D --window awc --fused-rounds R`` (fused
rounds ``cloud_only`` by default, DSD's: the target decodes one token per pass; or
``colocated``: the co-located draft runs speculative rounds; the server's AWC decides
during them either way) and, in this process, drafts each test
prompt with the draft model through :func:`edgespec.runtime.edge.drafter.generate` behind an
emulated link of each ``--rtt-ms``, once per window policy, back to back. It reports per
(RTT, window) the output tokens per second, mean TPOT, fused rounds and whether every
output equals target-only greedy decoding (the server's own fused baseline is not used:
target-only outputs come from ``edgespec trace``-style in-process decoding). Results go to
``--out`` as JSON; the server (on ``--port``, else a free port) writes its output beside it
(:func:`server_log_path`), and one that does not come up is an error quoting that log. A
run stopped before ``--out`` is written (an error, Ctrl-C, SIGTERM) stops the server and
removes the folder it made for ``--out`` unless the log is in it (the log stays, to say
what happened).
"""

from __future__ import annotations

import argparse
import glob
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.argument_types import positive_int
from edgespec.arguments import add_max_new_tokens, add_real_pair, add_threads, add_verbose
from edgespec.errors import UserInputError
from edgespec.output_paths import output_file, write_text_atomically

WINDOWS: dict[str, dict[str, Any]] = {
    "static": {"gamma": 4},
    "dynamic": {},
    "awc": {},
}


@dataclass(frozen=True, slots=True)
class PairRun:
    """One (RTT, window) cell over every prompt."""

    rtt_ms: float
    window: str
    num_tokens: int
    seconds: float
    mean_tpot_ms: float
    num_rounds: int
    num_fused_rounds: int
    lossless: bool

    @property
    def tokens_per_s(self) -> float:
        return self.num_tokens / self.seconds if self.seconds > 0 else 0.0


def run_cell(
    address: str, drafter: Any, prompts: list[tuple[int, ...]], references: list[tuple[int, ...]],
    rtt_ms: float, window: str, max_new: int, seed: int,
) -> PairRun:  # fmt: skip
    """Every prompt, one after another, with ``window`` behind a link of ``rtt_ms``."""
    import numpy as np

    from edgespec.core.types import SamplingParams
    from edgespec.policies.registry import build_policy
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    policy = build_policy("window", window, WINDOWS[window])
    link = LinkEmulation(rtt_ms, rtt_ms * 0.1, 100.0)
    verifier = EmulatedLinkVerifier(RemoteVerifier(address), link, np.random.default_rng(seed))
    tokens, seconds, tpots, rounds, fused, lossless = 0, 0.0, [], 0, 0, True
    for i, (prompt, reference) in enumerate(zip(prompts, references, strict=True)):
        options = DraftOptions(f"realpair-{window}-{rtt_ms:g}-{i}")
        sampling = SamplingParams(max_new_tokens=max_new)
        result = generate(verifier, drafter, prompt, sampling, options, policy)
        r = result.request
        tokens += r.num_output_tokens
        seconds += r.finish_s - r.arrival_s
        if r.tpot_s is not None:
            tpots.append(r.tpot_s)
        rounds += len(result.rounds)
        fused += sum(1 for x in result.rounds if x.fused)
        lossless &= result.output_token_ids == reference
    mean_tpot_ms = 1e3 * sum(tpots) / len(tpots) if tpots else float("nan")
    return PairRun(rtt_ms, window, tokens, seconds, mean_tpot_ms, rounds, fused, lossless)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_real_pair(parser)
    parser.add_argument(
        "--limit",
        type=positive_int,
        default=2,
        help="test prompts per dataset (gsm8k, cnndm, humaneval; default 2)",
    )
    add_max_new_tokens(parser, 48)
    parser.add_argument(
        "--rtt-ms", default="10,30", help="comma-separated RTTs, ms (default 10,30)"
    )
    parser.add_argument(
        "--windows",
        default="static,dynamic,awc",
        help="comma-separated window policies: static (γ 4), dynamic, awc (default: all three)",
    )
    parser.add_argument(
        "--fused-rounds",
        choices=["cloud_only", "colocated"],
        default="cloud_only",
        help="what the server's fused rounds are: DSD's cloud_only (default) or colocated",
    )
    add_threads(parser, 1, "torch threads, each process")
    add_verbose(parser)
    parser.add_argument("--port", type=int, default=None, help="server port (default: a free one)")
    parser.add_argument(
        "--out",
        type=output_file,
        default=Path("runs/dsd-realpair.json"),
        help="JSON results (default runs/dsd-realpair.json)",
    )


def cells_of(args: argparse.Namespace) -> tuple[list[float], list[str]]:
    """``--rtt-ms`` and ``--windows`` as lists, checked before anything loads (each value
    once; RTTs an emulated link takes), with ``--port`` (the server's: 1..65535)."""
    from edgespec.core.link_delay import link_setting_problem

    windows = args.windows.split(",")
    unknown = sorted(set(windows) - set(WINDOWS))
    if unknown:
        raise UserInputError(f"--windows: unknown {unknown}; known: {sorted(WINDOWS)}")
    rtts: list[float] = []
    for text in args.rtt_ms.split(","):
        try:
            rtt = float(text)
        except ValueError:
            raise UserInputError(f"--rtt-ms: {text.strip()!r} is not a number") from None
        problem = link_setting_problem("rtt_ms", rtt)  # its jitter, a tenth, is then in range
        if problem is not None:
            raise UserInputError(f"--rtt-ms: rtt_ms {problem}")
        rtts.append(rtt)
    for flag, values in (("--rtt-ms", [f"{r:g}" for r in rtts]), ("--windows", windows)):
        twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
        if twice is not None:
            raise UserInputError(f"{flag}: {twice} is given twice")
    if args.port is not None and not 1 <= args.port <= 65535:
        raise UserInputError(f"--port must be in 1..65535, got {args.port}")
    return rtts, windows


def run(args: argparse.Namespace) -> int:
    rtts, windows = cells_of(args)

    import torch

    from edgespec.datasets.prompts import load_prompts
    from edgespec.models.loading import load_model
    from edgespec.reproduce.folder import incomplete_run_removed
    from edgespec.runtime.backends.mask_check_cache import checked_target
    from edgespec.runtime.edge.draft_backends import make_drafter
    from edgespec.runtime.loadgen.server_process import ServerProcess, free_port
    from edgespec.runtime.wire.inprocess import target_greedy_decode

    torch.set_num_threads(args.threads)
    loaded = load_model(args.target, require_tokenizer=True, verbose=args.verbose)
    draft = load_model(args.draft, target=loaded, verbose=args.verbose)
    tokenizer = loaded.tokenizer
    assert tokenizer is not None  # required above
    texts = [
        p.text for d in ("gsm8k", "cnndm", "humaneval") for p in load_prompts(d, "test", args.limit)
    ]
    prompts = [tuple(tokenizer(t)["input_ids"])[-256:] for t in texts]
    target = checked_target(loaded.model, loaded.weight_files)
    references = [target_greedy_decode(target, p, args.max_new_tokens) for p in prompts]
    del target, loaded
    serve = ["--target", args.target, "--draft", args.draft, "--window", "awc",
             "--fused-rounds", args.fused_rounds, "--threads", str(args.threads)]  # fmt: skip
    log = server_log_path(args.out)
    written = [glob.escape(args.out.name)]
    cells = []
    with incomplete_run_removed(args.out.parent, written, args.out.name):  # or it leaves none
        log.unlink(missing_ok=True)  # this run's output only
        server = ServerProcess(serve, args.port or free_port(), log)
        try:
            server.start(300.0)
            drafter = make_drafter(args.draft, draft.model, target_vocab(server.address))
            for rtt in rtts:
                for window in windows:
                    cell = run_cell(server.address, drafter, prompts, references, rtt, window,
                                    args.max_new_tokens, seed=0)  # fmt: skip
                    cells.append(cell)
                    print(json.dumps(_row(cell)), flush=True)
        finally:
            server.stop()
        write_text_atomically(args.out, json.dumps([_row(c) for c in cells], indent=1) + "\n")
    return 0 if all(c.lossless for c in cells) else 1


def server_log_path(out: Path) -> Path:
    """Where the server's output goes: beside ``--out`` (``NAME-server.log``)."""
    return out.with_name(f"{out.stem}-server.log")


def target_vocab(address: str) -> int:
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    return RemoteVerifier(address).vocab_size()


def _row(cell: PairRun) -> dict[str, Any]:
    return {
        "rtt_ms": cell.rtt_ms,
        "window": cell.window,
        "tokens": cell.num_tokens,
        "seconds": round(cell.seconds, 3),
        "tokens_per_s": round(cell.tokens_per_s, 3),
        "mean_tpot_ms": round(cell.mean_tpot_ms, 2),
        "rounds": cell.num_rounds,
        "fused_rounds": cell.num_fused_rounds,
        "lossless": cell.lossless,
    }
