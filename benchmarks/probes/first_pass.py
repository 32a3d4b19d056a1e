"""A server's first request with and without the target's warm-up at start (Gemma 3 270M,
CPU, one thread; docs/DEPLOY.md): the first pass of a process pays one-time costs.

    python benchmarks/probes/first_pass.py [REPEATS] [--json PATH]   # default 4 repeats

Each run is a fresh process that loads the target as ``edgespec serve`` does (its
self-check found cached: one untimed run first makes sure of that), warms it up
(:func:`edgespec.runtime.backends.warm_up.warm_up`) or not, then serves three requests one
after the other: a 6-token prompt's prefill (its time is the first token's, on the server)
and 7 decode steps. ``REPEATS`` runs each way, alternated; prints (and writes to ``--json
PATH``, :mod:`probe_json`) each run's three prefill times, the means per request and the
first request's mean over the later ones', with and without the warm-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from probe_json import add_json_option, finish, positive_int

PROMPTS = [(2, 818, 5279, 529, 7001, 563), (2, 100, 200, 300, 400, 500), (2, 9, 8, 7, 6, 5)]
"""The three requests' prompts (token ids), different so no pass repeats another's."""
DECODE_STEPS = 7
MODES = ("without_warm_up", "with_warm_up")
CHILD_THREADS = 1
"""The torch threads of each measured process (the record's ``threads``)."""


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repeats", nargs="?", type=positive_int, default=4, metavar="REPEATS")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    add_json_option(parser)
    return parser.parse_args(argv)


def child(mode: str) -> list[float]:
    """This process's three requests' prefill seconds, the target warmed up or not."""
    import torch

    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.base import ForwardItem
    from edgespec.runtime.backends.mask_check_cache import checked_target
    from edgespec.runtime.backends.warm_up import warm_up

    torch.set_num_threads(CHILD_THREADS)
    loaded = load_model("gemma3-270m", "float32", device="cpu", with_tokenizer=False)
    target = checked_target(loaded.model, loaded.weight_files)
    if mode == "with_warm_up":
        warm_up(target)
    prefill_s = []
    for prompt in PROMPTS:
        start = time.perf_counter()
        out = target.forward([ForwardItem(None, 0, prompt, 1)])[0]
        prefill_s.append(round(time.perf_counter() - start, 4))
        kv, length = out.kv, len(prompt)
        for _ in range(DECODE_STEPS):
            token = int(out.logits[-1].argmax())
            out = target.forward([ForwardItem(kv, length, (token,), 1)])[0]
            kv, length = out.kv, length + 1
    return prefill_s


def run_child(mode: str) -> list[float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode], capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def measure(repeats: int) -> dict[str, Any]:
    """Each run's prefill seconds per mode, the means per request and the ratios."""
    run_child("without_warm_up")  # untimed: the self-check recorded, the files in the cache
    runs: dict[str, list[list[float]]] = {mode: [] for mode in MODES}
    for _ in range(repeats):
        for mode in MODES:
            runs[mode].append(run_child(mode))
    results: dict[str, Any] = {f"{mode}_prefill_s": runs[mode] for mode in MODES}
    for mode in MODES:
        means = [round(statistics.mean(run[i] for run in runs[mode]), 4) for i in range(3)]
        results[f"{mode}_mean_prefill_s"] = means
        results[f"{mode}_first_over_later"] = round(means[0] / statistics.mean(means[1:]), 2)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if args.child is not None:
        print(json.dumps(child(args.child)), flush=True)
        return
    results = measure(args.repeats)
    print(json.dumps(results), flush=True)
    finish(args.json, "first_pass.py", argv, results, num_threads=CHILD_THREADS)


if __name__ == "__main__":
    main()
