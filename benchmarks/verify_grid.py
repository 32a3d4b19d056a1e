"""Time the target's verification pass over WISP's Eq. 19 grid (issue 52, item 4).

    PYTHONPATH=. python3 benchmarks/verify_grid.py --device cuda --shape llama2-7b \
        --out benchmarks/results/verify-grid-llama2-7b.json
    PYTHONPATH=. python3 benchmarks/verify_grid.py --dry-run     # tiny shape, CPU, seconds

The target is a RANDOM-INITIALISED Llama-architecture model (no download) of a seed paper
target's shape (``--shape``; the numbers of ``edgespec/data/models/NAME.yaml``): layers,
hidden, FFN, heads, KV heads, head size and vocabulary as published; Qwen's per-head q/k
norms and biases are left out, which changes no matrix product's size. It runs on
``--device`` in ``--dtype`` behind the project's own
:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget`, so the timed
call is :meth:`forward` as the server runs it (masks, padded KV cache, per-row KV cut back,
logits of every new token copied to the host). Its load-time mask probe is skipped
(``check_masks=False``; ``--check-masks`` runs it): it checks exactness, not speed.

``--numerics exact,lossy`` builds one target per numerics (the same seeded weights; exact:
the batch-invariant kernels, lossy: the library's, RUNTIME.md *Exact numerics*) and times
each point in both, alternating which goes first, so their ratio is measured side by side;
rows carry their ``numerics`` and Eq. 19 is fitted per numerics.

Grid point (B, n, c): B items, each forwarding n new tokens (logits for all n, as a
verification of n − 1 draft tokens) on a cached context of c tokens. One KV state per
context is built first (a cold forward, untimed) and shared by the B items. Each point runs
``--warmup`` untimed passes, then ``--repeats`` timed ones (``torch.cuda.synchronize``
around each on CUDA); rows keep every time and the median. Points run in a seeded random
order (drift does not line up with a grid axis); a point whose KV working set (3 × B ·
(c + n) · KV bytes per token: the padded batch cache, the extended cache, the rows cut back)
exceeds ``--max-kv-gib`` is skipped and listed. The JSON is rewritten after every point
(``complete`` false until the end), so a run stopped by a timeout still leaves its rows;
``--budget-s`` stops starting points after that many seconds.

Eq. 19 (T = a·N_linear + b_compute·N_interactions + b_read·N_cached + c) is fitted to the
medians with :mod:`edgespec.profiling.fit` (OLS on a seeded 75 % of the points, R², MAE and
MAPE on the held-out 25 %, bootstrap intervals).

Estimated time (``estimate_grid_s``, printed at the start of every run; the JSON's
``h200_estimate_s`` beside its ``wall_s``): a roofline pass on one H200 (989 TFLOP/s dense bf16
at 50 %, 4.8 TB/s at 70 %: weights, then the KV read and copied) plus eager overheads that are
guesses (0.4 ms per layer per pass, 20 µs per layer per item, logits to the host at 10 GB/s),
2 warm-up + 10 timed passes per point, plus a 15 s model build. The default grid, B ∈ {1, 2,
4, 8, 12, 16, 24, 32} × n ∈ {1, 2, 4, ..., 64} × c ∈ {128, 256, ..., 4096} (336 points), for
``llama2-7b`` in bf16: 294 points under the 60 GiB KV limit (0.5 MiB of KV per token), about
141 s (2.4 minutes); ``llama3.1-8b`` (grouped KV, all 336 points) about 194 s; ``qwen3-32b``
about 383 s; twice that with ``--numerics exact,lossy``. The estimate is a floor for the
exact pass: on an H200 its points took a median 3.2x their estimate, the pass bound by
host-side dispatch (docs/PERFORMANCE.md, *On a CUDA machine*), so tools/gpu_check.sh's grid
step covers the points its ``--budget-s`` reaches.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from edgespec.hardware.presets import ModelArchitecture, available, load_architecture
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.fit import WISP_TERMS, fit_linear, split_indices, wisp_design
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.transformers_backend import Numerics, TransformersTarget

PAPER_SHAPES = {
    "llama2-7b": "Zhu et al. (seed 001) target",
    "llama2-13b": "Zhu et al. (seed 001) target",
    "llama3.1-8b": "WISV (seed 003) target",
    "qwen3-14b": "WISP (seed 000) target",
    "qwen3-32b": "WISP (seed 000) target",
    "qwen-72b": "DSD (seed 004) target; bf16 weights exceed one H200",
}
TINY = ModelArchitecture("tiny", "built in benchmarks/verify_grid.py", 2, 64, 128, 4, 2, 16, 512)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
GIB = 1 << 30
# H200 SXM datasheet: 989 TFLOP/s dense bf16, 4.8 TB/s HBM3e; efficiencies as HardwareSpec's.
PEAK_FLOPS, BANDWIDTH_B_S, COMPUTE_EFF, MEMORY_EFF = 989e12, 4.8e12, 0.5, 0.7
LAYER_S, ITEM_LAYER_S, HOST_B_S, BUILD_S = 0.4e-3, 20e-6, 10e9, 15.0


@dataclass(frozen=True, slots=True)
class Grid:
    """The Eq. 19 grid: batch sizes × new tokens per item × cached context tokens."""

    batch: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 24, 32)
    new_tokens: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    context: tuple[int, ...] = (128, 256, 512, 1024, 2048, 4096)

    def points(self) -> list[tuple[int, int, int]]:
        """(batch, new_tokens, context) in grid order."""
        return list(itertools.product(self.batch, self.new_tokens, self.context))


DEFAULT_GRID = Grid()
DRY_GRID = Grid(batch=(1, 2), new_tokens=(1, 4), context=(8, 24))


def architecture(name: str) -> ModelArchitecture:
    return TINY if name == "tiny" else load_architecture(name)


def kv_working_set_bytes(arch: ModelArchitecture, dtype_bytes: int, point: Sequence[int]) -> int:
    batch, new, context = point
    per_token = arch.kv_bytes_per_token // arch.dtype_bytes * dtype_bytes
    return 3 * batch * (context + new) * per_token


def estimate_pass_s(arch: ModelArchitecture, dtype_bytes: int, point: Sequence[int]) -> float:
    """One pass on one H200 (module constants): roofline plus eager overheads."""
    batch, new, context = point
    shape = BatchShape.of([(new, context)] * batch)
    flops = arch.flops(shape.num_linear, shape.num_interactions)
    weights = arch.weight_bytes // arch.dtype_bytes * dtype_bytes
    memory = weights + 2 * kv_working_set_bytes(arch, dtype_bytes, point)  # each written, read
    roofline = max(flops / (PEAK_FLOPS * COMPUTE_EFF), memory / (BANDWIDTH_B_S * MEMORY_EFF))
    overhead = arch.num_layers * (LAYER_S + ITEM_LAYER_S * batch)
    return roofline + overhead + 4 * batch * new * arch.vocab_size / HOST_B_S


def estimate_grid_s(
    arch: ModelArchitecture, dtype_bytes: int, points: Sequence[Sequence[int]], passes: int
) -> float:
    """Model build plus ``passes`` passes at every point."""
    return BUILD_S + passes * sum(estimate_pass_s(arch, dtype_bytes, p) for p in points)


def build_target(
    arch: ModelArchitecture,
    device: str,
    dtype: torch.dtype,
    seed: int,
    check_masks: bool,
    numerics: Numerics = "exact",
) -> TransformersTarget:
    """A random Llama of ``arch``'s shape, built on ``device`` in ``dtype``, serving in
    ``numerics``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=arch.vocab_size,
        hidden_size=arch.hidden_size,
        intermediate_size=arch.ffn_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        max_position_embeddings=1 << 16,
        tie_word_embeddings=arch.tied_embeddings,
        bos_token_id=None,
        pad_token_id=None,
        eos_token_id=None,
    )
    previous = torch.get_default_dtype()
    torch.manual_seed(seed)
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    model.eval()  # type: ignore[no-untyped-call]
    return TransformersTarget(model, check_masks=check_masks, numerics=numerics)


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return str(torch.cuda.get_device_name(torch.device(device)))
    import platform

    return platform.processor() or platform.machine() or "cpu"


def time_point(
    target: TransformersTarget, items: list[ForwardItem], warmup: int, repeats: int, cuda: bool
) -> list[float]:
    """``repeats`` timed ``forward`` calls after ``warmup`` untimed ones (seconds)."""
    times = []
    for run in range(warmup + repeats):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        outputs = target.forward(items)
        if cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        del outputs
        if run >= warmup:
            times.append(elapsed)
    return times


def fit_eq19(rows: Sequence[dict[str, Any]], seed: int) -> dict[str, Any]:
    """Eq. 19 on the rows' medians: coefficients, intervals, train and held-out metrics."""
    if len(rows) < 6:
        return {"skipped": f"{len(rows)} rows; the fit needs at least 6"}
    shapes = [BatchShape.of([(r["new_tokens"], r["context"])] * r["batch"]) for r in rows]
    x = wisp_design(shapes)
    y = np.array([r["median_s"] for r in rows], dtype=np.float64)
    rng = np.random.default_rng(seed)
    train, test = split_indices(len(rows), 0.25, rng)
    fit = fit_linear(WISP_TERMS, x, y, train, test, rng, num_bootstrap=200)
    return {
        "terms": "T = a_s*N_linear + b_compute_s*N_interactions + b_read_s*N_cached + c_s",
        "coefficients": fit.as_dict(),
        "intervals_95": dict(zip(fit.names, fit.intervals, strict=True)),
        "train": asdict(fit.train),
        "held_out": asdict(fit.test),
        "held_out_points": [[rows[i][k] for k in ("batch", "new_tokens", "context")] for i in test],
    }


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not comma-separated integers: {text!r}") from error


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--dtype", choices=sorted(DTYPES), help="default bfloat16 on cuda, else float32")
    p.add_argument("--shape", default="llama2-7b", choices=["tiny", *available("models")])
    p.add_argument("--batch", type=_ints, default=DEFAULT_GRID.batch, help="comma list")
    p.add_argument("--new-tokens", type=_ints, default=DEFAULT_GRID.new_tokens, help="comma list")
    p.add_argument("--context", type=_ints, default=DEFAULT_GRID.context, help="comma list")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--max-kv-gib", type=float, default=60.0, help="skip bigger points (60)")
    p.add_argument("--budget-s", type=float, help="start no point after this many seconds")
    p.add_argument("--check-masks", action="store_true", help="run the load-time mask probe")
    p.add_argument(
        "--numerics", type=_numerics, default=("exact",), help="exact, lossy or exact,lossy"
    )
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="write the JSON here")
    p.add_argument("--dry-run", action="store_true", help="tiny shape, tiny grid, CPU")
    args = p.parse_args(argv)
    if args.dry_run:
        dry = {"device": "cpu", "shape": "tiny", "warmup": 1, "repeats": 2, "threads": 1}
        dry |= {"batch": DRY_GRID.batch, "new_tokens": DRY_GRID.new_tokens}
        vars(args).update(dry, context=DRY_GRID.context)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.error(f"--device {args.device}: torch {torch.__version__} sees no CUDA device")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        p.error(f"--device must be cpu, cuda or cuda:N, got {args.device!r}")
    if args.repeats < 1 or args.warmup < 0:
        p.error(f"--repeats must be >= 1 and --warmup >= 0, got {args.repeats}, {args.warmup}")
    if min((*args.batch, *args.new_tokens)) < 1 or min(args.context) < 1:
        p.error("--batch, --new-tokens and --context values must be >= 1")
    args.dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
    return args


def _numerics(text: str) -> tuple[Numerics, ...]:
    names = tuple(text.split(","))
    if not names or len(set(names)) != len(names) or not set(names) <= {"exact", "lossy"}:
        raise argparse.ArgumentTypeError(f"expected exact, lossy or exact,lossy, got {text!r}")
    return names  # type: ignore[return-value]


def _header(args: argparse.Namespace, arch: ModelArchitecture, grid: Grid) -> dict[str, Any]:
    import transformers

    return {
        "benchmark": "verify_grid",
        "command": ["benchmarks/verify_grid.py", *sys.argv[1:]],
        "device": args.device,
        "device_name": device_name(args.device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "dtype": args.dtype,
        "shape": asdict(arch) | {"paper": PAPER_SHAPES.get(arch.name, "not a seed paper's target")},
        "model": f"random-initialised LlamaForCausalLM, seed {args.seed}",
        "mask_probe": args.check_masks,
        "numerics": list(args.numerics),
        "grid": asdict(grid),
        "warmup": args.warmup,
        "repeats": args.repeats,
        "max_kv_gib": args.max_kv_gib,
        "torch_threads": torch.get_num_threads(),
    }


def _check_weights_fit(arch: ModelArchitecture, dtype_bytes: int, device: str) -> None:
    """SystemExit naming --shape when its weights would take over 90 % of the device."""
    if device.startswith("cuda"):
        total = torch.cuda.get_device_properties(torch.device(device)).total_memory
        weights = arch.weight_bytes // arch.dtype_bytes * dtype_bytes
        if weights > 0.9 * total:
            raise SystemExit(
                f"--shape {arch.name}: {weights / GIB:.0f} GiB of weights do not fit "
                f"{total / GIB:.0f} GiB on {device}"
            )


def _point(p: Sequence[int]) -> dict[str, int]:
    return {"batch": p[0], "new_tokens": p[1], "context": p[2]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build a target per numerics and the contexts' KV, time every point in each (the
    order alternating from point to point), fit Eq. 19 per numerics."""
    arch, dtype = architecture(args.shape), DTYPES[args.dtype]
    size = torch.empty((), dtype=dtype).element_size()
    grid = Grid(args.batch, args.new_tokens, args.context)
    order = grid.points()
    np.random.default_rng(args.seed).shuffle(order)
    fits = [p for p in order if kv_working_set_bytes(arch, size, p) <= args.max_kv_gib * GIB]
    result = _header(args, arch, grid)
    passes = (args.warmup + args.repeats) * len(args.numerics)
    result["h200_estimate_s"] = estimate_grid_s(arch, size, fits, passes)
    print(f"{len(fits)} of {len(order)} points; estimate on one H200: "
          f"{result['h200_estimate_s']:.0f} s", flush=True)  # fmt: skip
    _check_weights_fit(arch, size * len(args.numerics), args.device)
    started = time.perf_counter()
    targets = {
        n: build_target(arch, args.device, dtype, args.seed, args.check_masks, n)
        for n in args.numerics
    }
    rng = np.random.default_rng(args.seed + 1)

    def tokens(count: int) -> tuple[int, ...]:
        return tuple(int(t) for t in rng.integers(0, arch.vocab_size, count))

    prompts = {c: tokens(c) for c in grid.context}
    kv = {
        (n, c): target.forward([ForwardItem(None, 0, prompts[c], 1)])[0].kv
        for n, target in targets.items()
        for c in grid.context
    }
    result["build_s"] = time.perf_counter() - started
    rows: list[dict[str, Any]] = []
    skipped = [_point(p) | {"reason": "over --max-kv-gib"} for p in order if p not in fits]
    result |= {"rows": rows, "skipped": skipped, "complete": False}
    for index, (batch, new, context) in enumerate(fits):
        point = _point((batch, new, context))
        if args.budget_s is not None and time.perf_counter() - started > args.budget_s:
            skipped.append(point | {"reason": "over --budget-s"})
            continue
        news = [tokens(new) for _ in range(batch)]
        names = args.numerics if index % 2 == 0 else args.numerics[::-1]
        for name in names:
            items = [ForwardItem(kv[name, context], context, ids, new) for ids in news]
            row = _timed_row(targets[name], items, args) | point | {"numerics": name}
            (skipped if "reason" in row else rows).append(row | {"order": index})
        _write(args.out, result)
    result["wall_s"] = time.perf_counter() - started
    rows.sort(key=lambda r: (r["numerics"], r["batch"], r["new_tokens"], r["context"]))
    result["fit"] = {
        n: fit_eq19([r for r in rows if r["numerics"] == n], args.seed) for n in targets
    }
    result["exact_over_lossy"] = exact_over_lossy(rows)
    result["complete"] = True
    return result


def _timed_row(
    target: TransformersTarget, items: list[ForwardItem], args: argparse.Namespace
) -> dict[str, Any]:
    """One point's times in one numerics, printed; ``reason`` when it ran out of memory."""
    try:
        times = time_point(target, items, args.warmup, args.repeats, args.device != "cpu")
    except torch.cuda.OutOfMemoryError:
        del items
        torch.cuda.empty_cache()
        return {"reason": "out of device memory"}
    median = statistics.median(times)
    first = items[0]
    print(f"B={len(items)} n={first.num_logits} c={first.kv_len} {target.numerics}: "
          f"{median * 1e3:.2f} ms", flush=True)  # fmt: skip
    return {"median_s": median, "times_s": times}


def exact_over_lossy(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The exact pass's median over the lossy one's at every point timed in both: their
    median and range (``None`` when not both numerics ran)."""
    medians = {
        (r["numerics"], r["batch"], r["new_tokens"], r["context"]): r["median_s"] for r in rows
    }
    ratios = [
        medians[key] / medians[("lossy", *key[1:])]
        for key in medians
        if key[0] == "exact" and ("lossy", *key[1:]) in medians
    ]
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "num_points": len(ratios)}  # fmt: skip


def _write(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads or threads)
    try:
        result = run(args)
    finally:
        torch.set_num_threads(threads)  # as it was, for a caller in the same process
    _write(args.out, result)
    for name, fit in result["fit"].items():
        held = fit.get("held_out")
        summary = (
            fit["skipped"]
            if held is None
            else f"R² {held['r2']:.4f}, MAPE {held['mape_pct']:.1f} %"
        )
        count = sum(r["numerics"] == name for r in result["rows"])
        print(f"{name}: {count} points in {result['wall_s']:.1f} s; Eq. 19 held out: {summary}")
    ratio = result["exact_over_lossy"]
    if ratio is not None:
        print(f"exact / lossy pass time: median {ratio['median']:.3f} "
              f"({ratio['min']:.3f}-{ratio['max']:.3f}, {ratio['num_points']} points)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
