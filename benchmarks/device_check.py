"""The transformers target's exactness self-check on a device, and what exactness costs.

For each model built here (tiny Llama; tiny Gemma 3 with sliding-window layers; the
benchmarks' synthetic target, vocabulary 4096; or one registered model, ``--target``), in
both numerics of :class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget`
(``exact``: batch-invariant kernels; ``lossy``: the library's own), it builds the target on
``--device`` in ``--dtype``, which runs the load-time self-check
(:mod:`edgespec.runtime.backends.exactness`), and records whether it passed and, if not,
the first shape that differed. Then it times one verification pass of each numerics side
by side, in alternating order (CPU time on a CPU, synchronised wall time on a GPU): a batch
of ``--batch`` sessions with about ``--context`` cached tokens each, γ + 1 = 5 new tokens,
all logits kept; it writes every time, the medians and their ratio.

Usage: ``python benchmarks/device_check.py [--device cuda] [--dtype bfloat16]
[--out FILE.json]``; ``--dry-run``: the CPU, the tiny models only, two repeats (seconds).
The GPU check (``tools/gpu_check.sh``) runs it; it needs only torch and transformers.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.batch_invariant import ROW_MULTIPLE
from edgespec.runtime.backends.exactness import InexactBackendError
from edgespec.runtime.backends.transformers_backend import Numerics, TransformersTarget
from edgespec.runtime.testing import synthetic_target, tiny_gemma3, tiny_llama

Variant = tuple[str, Numerics, int]
"""(label, numerics, row multiple)."""


def _variants(row_multiples: list[int]) -> list[Variant]:
    """``exact`` at the first row multiple, ``exact-rowsN`` at the others, then ``lossy``."""
    first, *others = row_multiples
    exact = [("exact", "exact", first)] + [(f"exact-rows{m}", "exact", m) for m in others]
    return [*exact, ("lossy", "lossy", first)]  # type: ignore[list-item]


def _models(dry_run: bool, target: str | None) -> dict[str, Callable[[], Any]]:
    if target is not None:  # a registered model (on this machine only: nothing downloads)
        from edgespec.models.loading import load_model

        return {target: lambda: load_model(target).model}
    models: dict[str, Callable[[], Any]] = {
        "tiny-llama": lambda: tiny_llama(0, vocab_size=512),
        "tiny-gemma3-window8": lambda: tiny_gemma3(
            num_layers=2, sliding_window=8, layer_types=["sliding_attention", "full_attention"]
        ),
    }
    if not dry_run:
        models["synthetic-4096"] = synthetic_target
    return models


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _build(
    model: Any, numerics: Numerics, row_multiple: int
) -> tuple[TransformersTarget | None, dict[str, Any]]:
    """The target (``None`` when refused) and the self-check's outcome."""
    start = time.perf_counter()
    try:
        target = TransformersTarget(model, numerics=numerics, row_multiple=row_multiple)
    except InexactBackendError as exc:
        return None, {"passed": False, "refused": str(exc), "load_s": time.perf_counter() - start}
    found = target.inexactness
    outcome = {"passed": found is None, "inexactness": None if found is None else str(found)}
    return target, outcome | {"load_s": time.perf_counter() - start}


def _clock(device: torch.device) -> float:
    """This process's CPU time on a CPU (other processes' load does not count), wall time
    around a synchronised GPU."""
    return time.process_time() if device.type == "cpu" else time.perf_counter()


def _pass_items(target: TransformersTarget, batch: int, context: int) -> list[ForwardItem]:
    vocab = target.vocab_size
    items = []
    for row in range(batch):
        length = context + 3 * row  # uneven contexts: the batch is padded
        prompt = tuple((5 * i + row) % (vocab - 1) + 1 for i in range(length))
        kv = target.forward([ForwardItem(None, 0, prompt, 1)])[0].kv
        items.append(ForwardItem(kv, length, (1, 2, 3, 4, 5), 5))
    return items


def _time_passes(
    targets: dict[str, TransformersTarget], batch: int, context: int, repeats: int
) -> dict[str, Any]:
    items = {n: _pass_items(t, batch, context) for n, t in targets.items()}
    times: dict[str, list[float]] = {n: [] for n in targets}
    for repeat in range(repeats + 1):  # the first round warms up; the order alternates
        order = list(targets.items())
        for numerics, target in order if repeat % 2 == 0 else reversed(order):
            _sync(target.device)
            start = _clock(target.device)
            target.forward(items[numerics])
            _sync(target.device)
            times[numerics].append(_clock(target.device) - start)
    medians = {n: statistics.median(ts[1:]) for n, ts in times.items()}
    ratio = medians["exact"] / medians["lossy"] if len(medians) == 2 else None
    return {"times_s": times, "median_s": medians, "exact_over_lossy": ratio}


def check_model(
    build: Callable[[], Any], device: str, dtype: torch.dtype, args: argparse.Namespace
) -> dict[str, Any]:
    """The self-check of every variant on one model, and the timed passes of ``exact`` and
    ``lossy`` when both were built."""
    base = build().to(device=device, dtype=dtype)
    targets: dict[str, TransformersTarget] = {}
    report: dict[str, Any] = {}
    for label, numerics, row_multiple in _variants(args.row_multiples):
        target, outcome = _build(copy.deepcopy(base), numerics, row_multiple)
        report[label] = outcome | {"row_multiple": row_multiple}
        if target is not None and label in ("exact", "lossy"):
            targets[label] = target
    report["pass"] = _time_passes(targets, args.batch, args.context, args.repeats)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default=None)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument(
        "--row-multiples",
        type=lambda text: [int(m) for m in text.split(",")],
        default=[ROW_MULTIPLE],
        help=f"the exact mode's row multiples to try, comma-separated (default "
        f"{ROW_MULTIPLE}, the backend's)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--target", default=None, help="a registered model instead (e.g. gemma3-270m)"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny models, 2 repeats")
    args = parser.parse_args(argv)
    if args.dry_run:
        args.device, args.repeats, args.batch, args.context = "cpu", 2, 3, 20
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    dtype_name = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
    dtype = getattr(torch, dtype_name)
    results = {
        "device": args.device,
        "device_name": torch.cuda.get_device_name(args.device)
        if args.device.startswith("cuda")
        else "cpu",
        "dtype": dtype_name,
        "torch": torch.__version__,
        "batch": args.batch,
        "context": args.context,
        "threads": torch.get_num_threads(),
        "models": {},
    }
    labels = [label for label, _, _ in _variants(args.row_multiples)]
    for name, build in _models(args.dry_run, args.target).items():
        report = check_model(build, args.device, dtype, args)
        results["models"][name] = report
        verdicts = ", ".join(
            f"{n}: {'passed' if report[n]['passed'] else 'differs'}" for n in labels
        )
        ratio = report["pass"]["exact_over_lossy"]
        cost = "" if ratio is None else f"; exact/lossy pass time {ratio:.3f}"
        print(f"device_check {name} on {args.device} {dtype_name}: {verdicts}{cost}", flush=True)
        for label in labels:
            detail = report[label].get("refused") or report[label].get("inexactness")
            if detail:
                print(f"  {label}: {detail}", flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))
    exact_ok = all(r["exact"]["passed"] for r in results["models"].values())
    return 0 if exact_ok else 1


if __name__ == "__main__":
    sys.exit(main())
