"""The load-time exactness probe on Gemma 3 270M (CPU), with and without its passes that
skip the LM head where no comparison reads the logits (docs/DEPLOY.md, "Exactness
self-check"; docs/PERFORMANCE.md, "Backend A/B measurements").

    python benchmarks/probes/exactness_probe.py [THREADS] [--json PATH]   # default: 2 threads

Loads the target without running its self-checks, then times
:func:`~edgespec.runtime.backends.exactness.exactness_problem` over the served probe length
alternately with the head-free passes, with a full pass at every position, and with the
head-free passes again; prints (and writes to ``--json PATH`` with the command and host,
:mod:`probe_json`) the seconds of each and what each found (``null``: the same bits).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import torch
from probe_json import add_json_option, finish, positive_int

from edgespec.models.loading import load_model
from edgespec.runtime.backends.exactness import exactness_problem, probe_length
from edgespec.runtime.backends.transformers_backend import TransformersTarget


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("threads", nargs="?", type=positive_int, default=2, metavar="THREADS")
    add_json_option(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    threads = args.threads
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
    finish(args.json, "exactness_probe.py", argv, result)


if __name__ == "__main__":
    main()
