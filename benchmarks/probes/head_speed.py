"""Gemma 3 270M's LM head on CPU: one GEMM against ``blocked_head``, for a few row counts
(docs/PERFORMANCE.md, "Backend A/B measurements").

    python benchmarks/probes/head_speed.py [THREADS] [ROWS,ROWS,...]   # default: 1 thread, 1,5

Loads the target's output embedding (262,144 x 640, fp32), then for each row count prints
the median of 6 timed calls of each (after one warm-up) and whether the logits are
bit-identical.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import torch

from edgespec.models.loading import load_model
from edgespec.runtime.backends.lm_head import blocked_head


def median_ms(fn: Callable[[], torch.Tensor], repeats: int = 6) -> float:
    """Median wall milliseconds of ``repeats`` calls, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    counts = [int(r) for r in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 5]
    weight = load_model("gemma3-270m").model.get_output_embeddings().weight.detach()
    for rows in counts:
        hidden = torch.randn(rows, weight.shape[1], generator=torch.Generator().manual_seed(0))
        plain = median_ms(partial(torch.nn.functional.linear, hidden, weight))
        blocked = median_ms(partial(blocked_head, hidden, weight))
        same = torch.equal(blocked_head(hidden, weight), torch.nn.functional.linear(hidden, weight))
        print(f"{rows} rows: one GEMM {plain:.1f} ms, blocked {blocked:.1f} ms, identical {same}")


if __name__ == "__main__":
    main()
