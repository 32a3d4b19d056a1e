"""The load-time exactness probe on Gemma 3 270M (CPU), with and without its passes that
skip the LM head where no comparison reads the logits (docs/DEPLOY.md, "Exactness
self-check"; docs/PERFORMANCE.md, "Backend A/B measurements").

    python benchmarks/probes/exactness_probe.py [THREADS] [OUT.json]   # default: 2 threads

Loads the target without running its self-checks, then times
:func:`~edgespec.runtime.backends.exactness.exactness_problem` over the served probe length
alternately with the head-free passes, with a full pass at every position, and with the
head-free passes again; prints (and writes to ``OUT.json`` when given) the seconds of each
and what each found (``null``: the same bits).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from edgespec.models.loading import load_model
from edgespec.runtime.backends.exactness import exactness_problem, probe_length
from edgespec.runtime.backends.transformers_backend import TransformersTarget


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.set_num_threads(threads)
    target = TransformersTarget(load_model("gemma3-270m").model, check_masks=False)
    length = probe_length(target._layout.sliding_window, target.max_context_tokens)
    result: dict[str, Any] = {"model": "gemma3-270m", "threads": threads, "length": length}
    runs = []
    for head_free in (True, False, True):
        start = time.perf_counter()
        problem = exactness_problem(target, length, extend=target._extend if head_free else None)
        seconds = round(time.perf_counter() - start, 1)
        found = None if problem is None else str(problem)
        runs.append({"head_free": head_free, "seconds": seconds, "problem": found})
        print(json.dumps(runs[-1]), flush=True)
    result["runs"] = runs
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
