"""Runtime benchmark: ``edgespec bench runtime``.

Three measurements, side by side in one run, printed as Markdown tables:

1. single client: target-only greedy decoding (in-process) vs distributed speculative
   decoding through a loopback gRPC server (drafter in the client);
2. N concurrent clients: aggregate goodput (committed tokens/s) of distributed SD vs
   centralized serving (the server decodes for every client, batched) on one server;
3. verification cost of a follow-up round (cached prefix) vs a cold start at several
   prefix lengths.

Default models are synthetic (built in-process, see :mod:`edgespec.runtime.testing`):
a 12-layer target (``--synthetic-layers``) whose layers ≥ 2 are "quiet", and its first 2
layers as the draft.
``--target``/``--draft`` take real models (directory or name) instead.
``--json FILE`` also writes each section's timings and ratios as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgespec.arguments import add_max_new_tokens, add_threads, add_verbose
from edgespec.runtime.commands.bench_inputs import load_models, load_text_prompts, make_prompts


def _parse_ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target", default="synthetic", help="'synthetic' or a model dir/name (default synthetic)"
    )
    p.add_argument(
        "--draft",
        default="truncated",
        help="'truncated' (default; synthetic: the target's first 2 layers), 'ngram' or a model",
    )
    p.add_argument(
        "--clients", default="1,4,8,16", help="concurrent client counts (default 1,4,8,16)"
    )
    p.add_argument(
        "--synthetic-layers", type=int, default=12, help="synthetic target layers (default 12)"
    )
    p.add_argument(
        "--synthetic-hidden", type=int, default=512, help="synthetic hidden size (default 512)"
    )
    p.add_argument(
        "--prefix-lens", default="128,512,1024", help="prefix tokens (default 128,512,1024)"
    )
    add_max_new_tokens(p, 48)
    p.add_argument("--prompt-len", type=int, default=32, help="prompt tokens (default 32)")
    p.add_argument("--gamma", type=int, default=4, help="static window γ, tokens (default 4)")
    add_threads(p, 2)
    add_verbose(p)
    p.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="interleaved timing repeats (default 5; clients section: half as many)",
    )
    p.add_argument(
        "--prompts",
        help="JSONL with a 'prompt' text field (needs a tokenizer; default: random tokens)",
    )
    p.add_argument(
        "--skip",
        default="",
        help="comma list of sections to skip: single,clients,prefix (default: none)",
    )
    p.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the sections' numbers as JSON (default: print only)",
    )


def _server(backend: Any, max_batch: int = 16) -> Any:
    from edgespec.config import from_dict
    from edgespec.policies.batching import FcfsBatching
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService
    from edgespec.runtime.wire.grpc_server import ServerThread

    config = from_dict(ServerConfig, {"port": 0, "max_batch_size": max_batch})
    return ServerThread(
        lambda: VerificationService(VerificationEngine(backend), config, FcfsBatching())
    )


def _parallel(n: int, job: Callable[[int], int]) -> tuple[int, float]:
    """Run job(i) for i < n in threads; return (total tokens, wall seconds)."""
    counts = [0] * n
    barrier = threading.Barrier(n + 1)

    def run(i: int) -> None:
        barrier.wait()
        counts[i] = job(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return sum(counts), time.perf_counter() - start


def _cell(times: Sequence[float], work: float) -> str:
    """'best (median)' rate for ``work`` units done in each of ``times`` seconds."""
    return f"{work / min(times):.1f} ({work / statistics.median(times):.1f})"


def _rates(name: str, times: Sequence[float], work: float) -> dict[str, Any]:
    """The JSON form of a :func:`_cell`: every timing, and the best and median rates."""
    return {
        f"{name}_s": list(times),
        f"{name}_tok_s_best": work / min(times),
        f"{name}_tok_s_median": work / statistics.median(times),
    }


def bench_single(
    backend: Any,
    make_draft: Callable[[], Any],
    args: argparse.Namespace,
    texts: Sequence[tuple[int, ...]] = (),
) -> dict[str, Any]:
    """Print the single-client table; return its numbers."""
    from edgespec.core.types import SamplingParams
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.wire.grpc_client import RemoteVerifier
    from edgespec.runtime.wire.inprocess import target_greedy_decode

    prompt = make_prompts(1, args.prompt_len, backend.vocab_size, texts)[0]
    n = args.max_new_tokens
    target_greedy_decode(backend, prompt, 4)  # warm-up
    ar_times, sd_times = [], []
    with _server(backend) as server:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        sampling = SamplingParams(max_new_tokens=n)
        for rep in range(args.repeats):  # interleaved: load drift hits both alike
            t0 = time.perf_counter()
            reference = target_greedy_decode(backend, prompt, n)
            t1 = time.perf_counter()
            result = generate(
                verifier, make_draft(), prompt, sampling, DraftOptions(f"b{rep}"), _window(args)
            )
            t2 = time.perf_counter()
            assert result.output_token_ids == reference, "speculative output != target-only"
            ar_times.append(t1 - t0)
            sd_times.append(t2 - t1)
    r = result.request
    print(f"\n### Single client ({args.repeats} interleaved repeats; tokens/s best (median))\n")
    print("| decoding | tokens | tokens/s | acceptance | tokens/round |")
    print("|---|---|---|---|---|")
    print(f"| target-only greedy (in-process) | {n} | {_cell(ar_times, n)} | – | 1 |")
    print(
        f"| distributed SD, γ={args.gamma} (loopback gRPC) | {n} | {_cell(sd_times, n)} "
        f"| {r.num_accepted / r.num_drafted:.2f} | {n / r.num_rounds:.2f} |"
    )
    best = min(ar_times) / min(sd_times)
    median = statistics.median(ar_times) / statistics.median(sd_times)
    print(
        f"\nspeedup SD / target-only: **{best:.2f}×** best, {median:.2f}× median "
        "(outputs token-identical, asserted)"
    )
    return {
        "tokens": n,
        **_rates("target_only", ar_times, n),
        **_rates("sd", sd_times, n),
        "acceptance": r.num_accepted / r.num_drafted,
        "tokens_per_round": n / r.num_rounds,
        "speedup_best": best,
        "speedup_median": median,
        "identical_to_target_only": True,
    }


def _window(args: argparse.Namespace) -> Any:
    from edgespec.policies.window import StaticWindow

    return StaticWindow(args.gamma)


def bench_clients(
    backend: Any,
    make_draft: Callable[[], Any],
    args: argparse.Namespace,
    counts: Sequence[int],
    texts: Sequence[tuple[int, ...]] = (),
) -> list[dict[str, Any]]:
    """Print the concurrent-clients table; return one row of numbers per client count."""
    from edgespec.core.types import SamplingParams
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.messages import SessionSpec
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    sampling = SamplingParams(max_new_tokens=args.max_new_tokens)
    reps = max(1, args.repeats // 2)
    print(
        f"\n### Concurrent clients: aggregate goodput, committed tokens/s best (median) of {reps}\n"
    )
    print("| clients | distributed SD | mean batch | centralized | mean batch | SD / centralized |")
    print("|---|---|---|---|---|---|")
    rows: list[dict[str, Any]] = []
    for n in counts:
        prompts = make_prompts(n, args.prompt_len, backend.vocab_size, texts)
        sd_t: list[float] = []
        c_t: list[float] = []
        with _server(backend) as server:
            address = f"127.0.0.1:{server.port}"

            def sd(i: int, address: str = address, prompts: Any = prompts) -> int:
                result = generate(
                    RemoteVerifier(address),
                    make_draft(),
                    prompts[i],
                    sampling,
                    DraftOptions(f"sd{i}"),
                    _window(args),
                )
                return len(result.output_token_ids)

            def central(i: int, address: str = address, prompts: Any = prompts) -> int:
                spec = SessionSpec(f"c{i}", f"c{i}", prompts[i], sampling)
                return sum(len(c) for c in RemoteVerifier(address).generate(spec))

            stats = server.service.stats
            sd_batches = c_batches = 0.0
            for _ in range(reps):  # interleaved on one server
                before = stats()
                tokens, seconds = _parallel(n, sd)
                sd_t.append(seconds)
                sd_batches = _mean_batch(before, stats())
                before = stats()
                tokens_c, seconds_c = _parallel(n, central)
                c_t.append(seconds_c)
                c_batches = _mean_batch(before, stats())
        ratio = min(c_t) / min(sd_t) * tokens / tokens_c
        print(
            f"| {n} | {_cell(sd_t, tokens)} | {sd_batches:.2f} | {_cell(c_t, tokens_c)} "
            f"| {c_batches:.2f} | {ratio:.2f}× |"
        )
        rows.append(
            {
                "clients": n,
                "sd_tokens": tokens,
                **_rates("sd", sd_t, tokens),
                "sd_mean_batch": sd_batches,
                "centralized_tokens": tokens_c,
                **_rates("centralized", c_t, tokens_c),
                "centralized_mean_batch": c_batches,
                "sd_over_centralized": ratio,
            }
        )
    return rows


def _mean_batch(before: Any, after: Any) -> float:
    batches = after.num_batches - before.num_batches
    entries = sum(s * c for s, c in after.batch_size_histogram) - sum(
        s * c for s, c in before.batch_size_histogram
    )
    return entries / batches if batches else 0.0


def bench_prefix(
    backend: Any, args: argparse.Namespace, lengths: Sequence[int]
) -> list[dict[str, Any]]:
    """Print the follow-up vs cold-start table; return one row of numbers per prefix."""
    from edgespec.runtime.backends.base import ForwardItem

    rng = np.random.default_rng(7)
    k = args.gamma
    print(
        f"\n### Verification cost, γ={k}: follow-up (cached prefix, forwards 1+γ) vs cold "
        f"start (forwards prefix+γ); ms best (median) of {args.repeats}\n"
    )
    print("| prefix | cold start ms | follow-up ms | cold / follow-up (best) |")
    print("|---|---|---|---|")
    rows: list[dict[str, Any]] = []
    for length in lengths:
        prefix = tuple(int(t) for t in rng.integers(0, backend.vocab_size, length))
        draft = tuple(int(t) for t in rng.integers(0, backend.vocab_size, k))
        cached = backend.forward([ForwardItem(None, 0, prefix[:-1], 1)])[0].kv
        cold, warm = [], []
        for _ in range(args.repeats):  # interleaved, so drift hits both alike
            t0 = time.perf_counter()
            backend.forward([ForwardItem(None, 0, prefix + draft, k + 1)])
            t1 = time.perf_counter()
            backend.forward([ForwardItem(cached, length - 1, prefix[-1:] + draft, k + 1)])
            t2 = time.perf_counter()
            cold.append(t1 - t0)
            warm.append(t2 - t1)
        ms = [f"{min(x) * 1e3:.1f} ({statistics.median(x) * 1e3:.1f})" for x in (cold, warm)]
        print(f"| {length} | {ms[0]} | {ms[1]} | {min(cold) / min(warm):.1f}× |")
        rows.append(
            {
                "prefix": length,
                "cold_ms": [t * 1e3 for t in cold],
                "follow_up_ms": [t * 1e3 for t in warm],
                "cold_ms_best": min(cold) * 1e3,
                "cold_ms_median": statistics.median(cold) * 1e3,
                "follow_up_ms_best": min(warm) * 1e3,
                "follow_up_ms_median": statistics.median(warm) * 1e3,
                "cold_over_follow_up": min(cold) / min(warm),
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    import torch

    from edgespec.runtime.backends.transformers_backend import TransformersTarget

    torch.set_num_threads(args.threads)
    model, make_draft, desc, tokenizer = load_models(args)
    texts: tuple[tuple[int, ...], ...] = ()
    if args.prompts:
        texts = load_text_prompts(args.prompts, tokenizer)
        desc += f", prompts {args.prompts}"
    backend = TransformersTarget(model)
    skip = set(args.skip.split(","))
    print(
        f"## edgespec runtime bench: {desc}; torch threads {args.threads}; "
        f"{args.max_new_tokens} new tokens, prompt {args.prompt_len}, fp32 CPU"
    )
    report: dict[str, Any] = {
        "models": desc,
        "threads": args.threads,
        "max_new_tokens": args.max_new_tokens,
        "prompt_len": args.prompt_len,
        "gamma": args.gamma,
        "repeats": args.repeats,
    }
    if "single" not in skip:
        report["single"] = bench_single(backend, make_draft, args, texts)
    if "clients" not in skip:
        counts = _parse_ints(args.clients)
        report["clients"] = bench_clients(backend, make_draft, args, counts, texts)
    if "prefix" not in skip:
        report["prefix"] = bench_prefix(backend, args, _parse_ints(args.prefix_lens))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0
