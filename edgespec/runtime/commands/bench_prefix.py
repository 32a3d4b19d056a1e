"""``edgespec bench prefix``: what the server's prefix cache saves — verifying γ draft tokens
as a follow-up round on a session's cached KV (forwards 1 + γ tokens) against a cold start
that forwards the whole prefix + γ, at several prefix lengths, timed alternately in one run.

The target is the synthetic Llama (default, built in-process: ``--synthetic-layers``,
``--synthetic-hidden``) or a model by name or directory. ``--json FILE`` writes every
timing and ratio."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgespec.argument_types import (
    positive_int,
    repetitions,
    synthetic_hidden,
    synthetic_layers,
)
from edgespec.arguments import add_device_arguments, add_threads, add_verbose
from edgespec.errors import UserInputError, check_fits_context
from edgespec.output_paths import output_file, write_text_atomically


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default="synthetic", help="'synthetic' (default) or a model")
    p.add_argument(
        "--synthetic-layers", type=synthetic_layers, default=12, help="(default 12; at most 32)"
    )
    p.add_argument(
        "--synthetic-hidden",
        type=synthetic_hidden,
        default=512,
        help="(default 512; a multiple of 8, at most 2048)",
    )
    p.add_argument(
        "--prefix-lens", default="128,512,1024", help="prefix tokens (default 128,512,1024)"
    )
    p.add_argument("--gamma", type=positive_int, default=4, help="draft tokens (default 4)")
    p.add_argument(
        "--repeats",
        type=repetitions,
        default=5,
        help="alternated timings (default 5; at most 1,000)",
    )
    add_device_arguments(p, "the target")
    add_threads(p, 2)
    add_verbose(p)
    p.add_argument(
        "--json", type=output_file, metavar="FILE", help="also write the numbers as JSON"
    )


def _lengths(text: str) -> list[int]:
    try:
        lengths = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserInputError(
            f"--prefix-lens expects comma-separated integers, got {text!r}"
        ) from None
    if not lengths or min(lengths) < 2:
        raise UserInputError(f"--prefix-lens expects lengths ≥ 2, got {text!r}")
    return lengths


def bench_prefix(
    backend: Any, gamma: int, repeats: int, lengths: Sequence[int]
) -> list[dict[str, Any]]:
    """Print the follow-up vs cold-start table; return one row of numbers per prefix."""
    from edgespec.runtime.backends.base import ForwardItem

    rng = np.random.default_rng(7)
    k = gamma
    print(f"\n### Verification cost, γ={k}: follow-up (cached prefix, forwards 1+γ) vs cold "
          f"start (forwards prefix+γ); ms best (median) of {repeats}\n")  # fmt: skip
    print("| prefix | cold start ms | follow-up ms | cold / follow-up (best) |")
    print("|---|---|---|---|")
    rows: list[dict[str, Any]] = []
    for length in lengths:
        prefix = tuple(int(t) for t in rng.integers(0, backend.vocab_size, length))
        draft = tuple(int(t) for t in rng.integers(0, backend.vocab_size, k))
        cached = backend.forward([ForwardItem(None, 0, prefix[:-1], 1)])[0].kv
        cold, warm = [], []
        for _ in range(repeats):  # alternated, so drift hits both alike
            t0 = time.perf_counter()
            backend.forward([ForwardItem(None, 0, prefix + draft, k + 1)])
            t1 = time.perf_counter()
            backend.forward([ForwardItem(cached, length - 1, prefix[-1:] + draft, k + 1)])
            t2 = time.perf_counter()
            cold.append(t1 - t0)
            warm.append(t2 - t1)
        ms = [f"{min(x) * 1e3:.1f} ({statistics.median(x) * 1e3:.1f})" for x in (cold, warm)]
        print(f"| {length} | {ms[0]} | {ms[1]} | {min(cold) / min(warm):.1f}× |")
        rows.append({
            "prefix": length,
            "cold_ms": [t * 1e3 for t in cold],
            "follow_up_ms": [t * 1e3 for t in warm],
            "cold_ms_best": min(cold) * 1e3,
            "cold_ms_median": statistics.median(cold) * 1e3,
            "follow_up_ms_best": min(warm) * 1e3,
            "follow_up_ms_median": statistics.median(warm) * 1e3,
            "cold_over_follow_up": min(cold) / min(warm),
        })  # fmt: skip
    return rows


def run(args: argparse.Namespace) -> int:
    import torch

    from edgespec.arguments import DevicePlacement
    from edgespec.models.devices import device_placement
    from edgespec.models.loading import load_model, torch_dtype
    from edgespec.runtime.backends.mask_check_cache import checked_target

    lengths = _lengths(args.prefix_lens)
    files: tuple[Path, ...] = ()  # a model built in memory has none: probed every run
    placement = device_placement(args)
    torch.set_num_threads(args.threads)
    if args.target == "synthetic":
        from edgespec.runtime.testing import describe_synthetic, synthetic_target

        model = synthetic_target(args.synthetic_layers, args.synthetic_hidden)
        model.to(device=placement.device, dtype=torch_dtype(placement.dtype))
        desc = describe_synthetic(args.synthetic_layers, args.synthetic_hidden)
    else:
        loaded = load_model(
            args.target, placement.dtype, verbose=args.verbose, device=placement.device
        )
        model, files, desc = loaded.model, loaded.weight_files, args.target
    where = f"{placement.dtype} {placement.device}"
    if placement == DevicePlacement():
        where = "fp32 CPU"
    print(f"## edgespec bench prefix: {desc}; torch threads {args.threads}, {where}")
    backend = checked_target(model, files)
    check_fits_context("the longest --prefix-lens", max(lengths), "--gamma", args.gamma,
                       backend.max_context_tokens)  # fmt: skip
    rows = bench_prefix(backend, args.gamma, args.repeats, lengths)
    if args.json is not None:
        report = {"target": desc, "threads": args.threads, "gamma": args.gamma,
                  "repeats": args.repeats, "prefix": rows}  # fmt: skip
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(args.json, json.dumps(report, indent=2) + "\n")
    return 0
