"""Gemma 3 270M's LM head on CPU: one GEMM against ``blocked_head``, for a few row counts
(docs/PERFORMANCE.md, "Backend A/B measurements").

    python benchmarks/probes/head_speed.py [THREADS] [ROWS,ROWS,...] [--json PATH]
    # default: 1 thread, 1,5

Loads the target's output embedding (262,144 x 640, fp32), then for each row count prints
the median of 6 timed calls of each (after one warm-up) and whether the logits are
bit-identical; ``--json PATH`` writes the same, with blocked / one GEMM (``probe_json.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from probe_json import add_json_option, finish, int_list, positive_int

from edgespec.models.loading import load_model
from edgespec.runtime.backends.lm_head import blocked_head


@dataclass(frozen=True, slots=True)
class HeadTiming:
    """One row count's medians and whether the two heads gave the same bits."""

    num_rows: int
    one_gemm_ms: float
    blocked_ms: float
    identical: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "num_rows": self.num_rows,
            "one_gemm_ms": self.one_gemm_ms,
            "blocked_ms": self.blocked_ms,
            "blocked_over_one_gemm": self.blocked_ms / self.one_gemm_ms,
            "identical": self.identical,
        }

    def line(self) -> str:
        return (f"{self.num_rows} rows: one GEMM {self.one_gemm_ms:.1f} ms, blocked "
                f"{self.blocked_ms:.1f} ms, identical {self.identical}")  # fmt: skip


def median_ms(
    fn: Callable[[], object], repeats: int = 6, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Median wall milliseconds of ``repeats`` calls, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times) * 1e3


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Gemma 3 270M's LM head: one GEMM vs blocked")
    parser.add_argument("threads", nargs="?", type=positive_int, default=1, metavar="THREADS")
    parser.add_argument("rows", nargs="?", type=int_list, default=[1, 5], metavar="ROWS,ROWS,...")
    add_json_option(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    torch.set_num_threads(args.threads)
    weight = load_model("gemma3-270m").model.get_output_embeddings().weight.detach()
    timings = []
    for rows in args.rows:
        hidden = torch.randn(rows, weight.shape[1], generator=torch.Generator().manual_seed(0))
        plain = median_ms(partial(torch.nn.functional.linear, hidden, weight))
        blocked = median_ms(partial(blocked_head, hidden, weight))
        same = torch.equal(blocked_head(hidden, weight), torch.nn.functional.linear(hidden, weight))
        timings.append(HeadTiming(rows, plain, blocked, same))
        print(timings[-1].line())
    finish(args.json, "head_speed.py", argv, {"rows": [t.to_json() for t in timings]})


if __name__ == "__main__":
    main()
