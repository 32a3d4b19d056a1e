"""Verification batches with and without splitting padded passes, side by side
(docs/PERFORMANCE.md, "Backend A/B measurements").

    python benchmarks/probes/mixed_batch_ab.py [THREADS] [REPEATS]   # defaults: 2 threads, 4

Times each batch shape through the runtime engine (``edgespec.profiling.measure.measure_batch``,
the profile's code: fresh random prompts, untimed cache setup) on Gemma 3 270M, with
``TransformersTarget(split_padded_batches=True)`` (the default) and ``=False`` (one padded
pass), alternating the two in every repeat; the first repeat is a discarded warm-up. An
entry is (new tokens, cached tokens). Prints the median per shape and the ratio.
"""

from __future__ import annotations

import statistics
import sys

import torch

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


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    if repeats < 2:
        raise SystemExit("REPEATS must be at least 2: the first is a discarded warm-up")
    torch.set_num_threads(threads)
    model = load_model("gemma3-270m").model
    engines = {
        split: VerificationEngine(
            TransformersTarget(model, split_padded_batches=split), 1 << 30, 200
        )
        for split in (False, True)
    }
    backend = engines[True].backend
    prompts = PromptSource(backend.vocab_size, 7, backend.eos_token_ids)
    times: dict[tuple[str, bool], list[float]] = {}
    for rep in range(repeats):
        for name, entries in SHAPES.items():
            for split, engine in engines.items():
                _, elapsed = measure_batch(engine, prompts, entries, f"{name}-{split}-{rep}")
                if rep:
                    times.setdefault((name, split), []).append(elapsed)
    print(f"median of {repeats - 1} runs, {threads} threads: one padded pass / split / ratio")
    for name in SHAPES:
        one_ms, split_ms = (statistics.median(times[(name, s)]) * 1e3 for s in (False, True))
        print(f"{name}: {one_ms:.0f} ms / {split_ms:.0f} ms / {split_ms / one_ms:.2f}")


if __name__ == "__main__":
    main()
