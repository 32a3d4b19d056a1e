"""Verification batches with and without splitting padded passes, side by side
(docs/PERFORMANCE.md, "Backend A/B measurements").

    python benchmarks/probes/mixed_batch_ab.py [THREADS] [REPEATS] [--json PATH]
    # defaults: 2 threads, 4

Times each batch shape through the runtime engine (``edgespec.profiling.measure.measure_batch``,
the profile's code: fresh random prompts, untimed cache setup) on Gemma 3 270M, with
``TransformersTarget(split_padded_batches=True)`` (the default) and ``=False`` (one padded
pass), alternating the two in every repeat; the first repeat is a discarded warm-up. An
entry is (new tokens, cached tokens). Prints the median per shape and the ratio;
``--json PATH`` writes the same, with the target's numerics (``probe_json.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from probe_json import add_json_option, finish, positive_int

from edgespec.models.loading import load_model
from edgespec.profiling.measure import PromptSource, measure_batch
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.server.engine import VerificationEngine

SHAPES = {
    "cold 971": [(971, 0)],
    "follow-up 5 on 1000": [(5, 1000)],
    "cold 971 + follow-up 5 on 1000": [(971, 0), (5, 1000)],
    "cold 1200 + 3 follow-ups 5 on 500/1000/1500": [(1200, 0), (5, 500), (5, 1000), (5, 1500)],
    "4 follow-ups 5 on 500..2000": [(5, 500), (5, 1000), (5, 1500), (5, 2000)],
    "cold 600/400/200": [(600, 0), (400, 0), (200, 0)],
}


def shape_results(times: Mapping[tuple[str, bool], list[float]]) -> list[dict[str, Any]]:
    """Per shape, the median ms of one padded pass and of split passes, and their ratio."""
    rows = []
    for name in SHAPES:
        one_ms, split_ms = (statistics.median(times[(name, s)]) * 1e3 for s in (False, True))
        rows.append({"shape": name, "entries": [list(e) for e in SHAPES[name]],
                     "one_pass_ms": one_ms, "split_ms": split_ms,
                     "split_over_one_pass": split_ms / one_ms})  # fmt: skip
    return rows


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="padded passes: one vs split, side by side")
    parser.add_argument("threads", nargs="?", type=positive_int, default=2, metavar="THREADS")
    parser.add_argument("repeats", nargs="?", type=positive_int, default=4, metavar="REPEATS")
    add_json_option(parser)
    args = parser.parse_args(argv)
    if args.repeats < 2:
        parser.error("REPEATS must be at least 2: the first is a discarded warm-up")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    torch.set_num_threads(args.threads)
    model = load_model("gemma3-270m").model
    targets = {
        split: TransformersTarget(model, split_padded_batches=split) for split in (False, True)
    }
    engines = {split: VerificationEngine(target, 1 << 30, 200) for split, target in targets.items()}
    backend = engines[True].backend
    prompts = PromptSource(backend.vocab_size, 7, backend.eos_token_ids)
    times: dict[tuple[str, bool], list[float]] = {}
    for rep in range(args.repeats):
        for name, entries in SHAPES.items():
            for split, engine in engines.items():
                _, elapsed = measure_batch(engine, prompts, entries, f"{name}-{split}-{rep}")
                if rep:
                    times.setdefault((name, split), []).append(elapsed)
    rows = shape_results(times)
    print(f"median of {args.repeats - 1} runs, {args.threads} threads: "
          "one padded pass / split / ratio")  # fmt: skip
    for row in rows:
        print(f"{row['shape']}: {row['one_pass_ms']:.0f} ms / {row['split_ms']:.0f} ms / "
              f"{row['split_over_one_pass']:.2f}")  # fmt: skip
    numerics = {"numerics": targets[True].numerics, "timed_runs": args.repeats - 1}
    finish(args.json, "mixed_batch_ab.py", argv, {**numerics, "shapes": rows})


if __name__ == "__main__":
    main()
