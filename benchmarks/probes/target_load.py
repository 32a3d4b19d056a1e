"""A warm ``load_model("gemma3-270m")`` with and without its tokenizer: what a verification
server, which sees token ids only, saves at each start by reading none (docs/DEPLOY.md).

    python benchmarks/probes/target_load.py [REPEATS] [--json PATH]   # default 3 repeats

In one process, after one untimed load (the cache's fp32 copy made or read, the imports
done), ``REPEATS`` loads each way, alternated; prints (and writes to ``--json PATH``,
:mod:`probe_json`) each load's seconds, the medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from probe_json import add_json_option, finish, positive_int


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repeats", nargs="?", type=positive_int, default=3, metavar="REPEATS")
    add_json_option(parser)
    return parser.parse_args(argv)


def measure(repeats: int) -> dict[str, Any]:
    """Each load's seconds with and without the tokenizer, their medians and ratio."""
    from edgespec.models.loading import load_model

    load_model("gemma3-270m", with_tokenizer=False)
    seconds: dict[str, list[float]] = {"with_tokenizer": [], "without_tokenizer": []}
    for _ in range(repeats):
        for name in seconds:
            start = time.perf_counter()
            load_model("gemma3-270m", with_tokenizer=name == "with_tokenizer")
            seconds[name].append(round(time.perf_counter() - start, 2))
    results: dict[str, Any] = {f"{name}_s": runs for name, runs in seconds.items()}
    medians = {name: statistics.median(runs) for name, runs in seconds.items()}
    results |= {f"{name}_median_s": value for name, value in medians.items()}
    ratio = medians["without_tokenizer"] / medians["with_tokenizer"]
    results["without_over_with"] = round(ratio, 2)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    results = measure(args.repeats)
    print(json.dumps(results), flush=True)
    finish(args.json, "target_load.py", argv, results)


if __name__ == "__main__":
    main()
