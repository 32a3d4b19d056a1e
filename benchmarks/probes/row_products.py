"""Gemma 3 270M's exact verification pass on CPU: its linear layers as one product over the
padded rows against products of one shape, by rows per product (docs/PERFORMANCE.md,
"Backend A/B measurements"; ``edgespec/runtime/backends/batch_invariant.py``).

    python benchmarks/probes/row_products.py [THREADS] [REPEATS] [--json PATH]
    # defaults: 2 threads, 6 repeats

Variants, alternated in order each repeat: ``one-product-4`` (rows padded to a multiple of 4,
one product per layer: fast, but not batch-invariant where MKL picks its kernel by the row
count), ``fixed-4``, ``fixed-8``, ``fixed-16`` (:func:`invariant_linear` with that many rows
per product). Each times a pass of B sessions × n new tokens on 64 cached tokens after one
untimed pass, and checks bit for bit that the first session's logits in the B = 16 pass
equal the same session's alone (every session forwards the same tokens). Prints each
variant's ratio to ``one-product-4`` and the check; ``--json PATH`` writes the medians (ms),
the ratios and the checks with the command and host (``probe_json.py``).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from probe_json import add_json_option, finish, positive_int
from torch.nn import functional

from edgespec.models.loading import load_model
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.batch_invariant import invariant_linear
from edgespec.runtime.backends.transformers_backend import TransformersTarget

Linear = Callable[[torch.Tensor, torch.Tensor, "torch.Tensor | None", int], torch.Tensor]
SHAPES = ((1, 1), (1, 5), (4, 5), (8, 5), (16, 5))
CONTEXT = 64


def one_product(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, multiple: int
) -> torch.Tensor:
    """The rows padded to a multiple of ``multiple``, one product."""
    rows = x.reshape(-1, x.shape[-1])
    count = rows.shape[0]
    extra = max(multiple, -(-count // multiple) * multiple) - count
    out = functional.linear(functional.pad(rows, (0, 0, 0, extra)), weight, bias)[:count]
    return out.reshape(*x.shape[:-1], out.shape[-1])


def _target(model: Any, linear: Linear, multiple: int) -> TransformersTarget:
    """An exact target whose linear layers run ``linear`` with ``multiple`` rows."""
    target = TransformersTarget(model, check_masks=False, row_multiple=multiple)
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            forward = functools.partial(
                lambda self, x, fn: fn(x, self.weight, self.bias, multiple), fn=linear
            )
            module.forward = types.MethodType(forward, module)  # type: ignore[method-assign]
    return target


def _items(kv: Any, tokens: tuple[int, ...], batch: int) -> list[ForwardItem]:
    return [ForwardItem(kv, CONTEXT, tokens, len(tokens)) for _ in range(batch)]


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="exact linear layers: one product vs one shape")
    parser.add_argument("threads", nargs="?", type=positive_int, default=2, metavar="THREADS")
    parser.add_argument("repeats", nargs="?", type=positive_int, default=6, metavar="REPEATS")
    add_json_option(parser)
    return parser.parse_args(argv)


def row_results(
    times: Mapping[str, Mapping[str, Sequence[float]]], identical: Mapping[str, bool]
) -> dict[str, Any]:
    """The medians (ms) of each variant's timings (seconds) per shape, their ratio to
    ``one-product-4``'s, and each variant's bit-for-bit check."""
    medians = {v: {k: statistics.median(t) * 1e3 for k, t in ts.items()} for v, ts in times.items()}
    base = medians["one-product-4"]
    return {
        "median_ms": medians,
        "ratio_to_one_product_4": {
            v: {k: round(m[k] / base[k], 3) for k in m} for v, m in medians.items()
        },
        "row_alone_equals_row_in_16": dict(identical),
    }


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    threads, repeats = args.threads, args.repeats
    torch.set_num_threads(threads)
    model = load_model("gemma3-270m").model
    variants: dict[str, tuple[Linear, int]] = {
        "one-product-4": (one_product, 4),
        "fixed-4": (invariant_linear, 4),
        "fixed-8": (invariant_linear, 8),
        "fixed-16": (invariant_linear, 16),
    }
    rng = np.random.default_rng(0)
    prompt = tuple(int(t) for t in rng.integers(0, 262_000, CONTEXT))
    new = {n: tuple(int(t) for t in rng.integers(0, 262_000, n)) for _, n in SHAPES}
    times: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    identical: dict[str, bool] = {}
    for repeat in range(repeats):
        for name in list(variants) if repeat % 2 == 0 else list(variants)[::-1]:
            target = _target(model, *variants[name])
            kv = target.forward([ForwardItem(None, 0, prompt, 1)])[0].kv
            for batch, n in SHAPES:
                items = _items(kv, new[n], batch)
                target.forward(items)
                start = time.perf_counter()
                outputs = target.forward(items)
                times[name].setdefault(f"B={batch} n={n}", []).append(time.perf_counter() - start)
                if batch == 16:
                    alone = target.forward(items[:1])[0].logits
                    identical[name] = identical.get(name, True) and bool(
                        np.array_equal(alone, outputs[0].logits)
                    )
    result = {"repeats": repeats, **row_results(times, identical)}
    print(json.dumps(result["ratio_to_one_product_4"], indent=1), identical)
    finish(args.json, "row_products.py", argv, result)


if __name__ == "__main__":
    main()
