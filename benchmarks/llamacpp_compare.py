"""Transformers (fp32, today's backend) against llama.cpp (exact configuration) on the
bundled target Gemma 3 270M, in one run, interleaved (issue 39, item 4).

    .venv/bin/python -m benchmarks.llamacpp_compare \
        --json benchmarks/results/llamacpp-vs-transformers.json

Per backend, on the server's own code path (:class:`VerificationEngine.verify_batch`, in
process, no gRPC) and the 16 bundled test prompts (edgespec/data/prompts/general_test.jsonl):

* target-only: one stream, greedy, one token per forward pass (:func:`target_greedy_decode`);
* centralized batched serving at each client count c: c sessions, every live one decoding
  one token per step, all in one batch;
* distributed SD at c: c sessions, each drafting γ tokens per round with its own
  prompt-lookup + distilled-draft drafter (gemma3-270m-draft, as the README's chain); the
  drafting is the devices' work and is not timed, only the server's batched verification.

Aggregate tokens/s = committed tokens of all sessions / server seconds; per stream =
aggregate / c (the sessions run the same rounds). Every SD output must be token-identical
to that backend's centralized output, and session 0's to its target-only output
(``outputs_identical``; asserted, except in the lossy mode, which only records it). Then
WISP's Eq. 19 is fitted on the llama.cpp backend with :mod:`edgespec.profiling` on a reduced
App. C grid (held-out MAPE), and Eq. 19 plus a term per logit row (``--refit FILE`` redoes
both fits from a file's points).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgespec.runtime.backends.base import TargetBackend
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine

PROMPTS = Path(__file__).resolve().parents[1] / "edgespec/data/prompts/general_test.jsonl"
Drafter = Callable[[], Any]


def _arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", default="1,4,8,16", help="client counts (default 1,4,8,16)")
    p.add_argument("--max-new-tokens", type=int, default=32, help="per session (default 32)")
    p.add_argument("--gamma", type=int, default=4, help="draft tokens per round (default 4)")
    p.add_argument("--repeats", type=int, default=2, help="interleaved repeats (default 2)")
    p.add_argument("--threads", type=int, default=1, help="torch / llama.cpp threads (1)")
    p.add_argument("--skip-profile", action="store_true", help="no Eq. 19 fit")
    p.add_argument(
        "--lossy", action="store_true", help="llama.cpp in the lossy mode (llamacpp-lossy)"
    )
    p.add_argument("--refit", type=Path, help="only refit the Eq. 19 points of this JSON file")
    p.add_argument("--json", type=Path, help="write the numbers here")
    return p.parse_args()


def _sessions(
    backend: TargetBackend, prompts: Sequence[tuple[int, ...]], n: int, gamma: int,
    drafter: Drafter | None,
) -> tuple[list[tuple[int, ...]], float, int]:  # fmt: skip
    """(outputs, server seconds, rounds) of ``prompts`` decoded together; ``drafter``
    ``None``: centralized (no draft tokens)."""
    from edgespec.core.types import SamplingParams

    engine = VerificationEngine(backend, max_sessions=len(prompts))
    drafts = [drafter() for _ in prompts] if drafter is not None else []
    rng = np.random.default_rng(0)
    for i, prompt in enumerate(prompts):
        engine.open_session(SessionSpec(f"s{i}", "c", prompt, SamplingParams(max_new_tokens=n)))
    server_s, rounds = 0.0, 0
    while True:
        live = [i for i in range(len(prompts)) if not engine.session_finished(f"s{i}")]
        if not live:
            break
        calls = []
        for i in live:
            tokens = engine.session_tokens(f"s{i}")
            block: tuple[int, ...] = ()
            if drafts:
                block = drafts[i].propose(tokens, gamma, 0.0, rng).token_ids
            calls.append(VerifyCall(f"s{i}", len(tokens), block))
        start = time.perf_counter()
        outcomes = engine.verify_batch(calls)
        server_s += time.perf_counter() - start
        rounds += 1
        assert all(isinstance(o, VerifyOutcome) for o in outcomes), outcomes
    outputs = [engine.session_tokens(f"s{i}")[len(p) :] for i, p in enumerate(prompts)]
    return outputs, server_s, rounds


def _rates(times: Sequence[float], tokens: int, clients: int) -> dict[str, float]:
    best, median = tokens / min(times), tokens / statistics.median(times)
    return {
        "aggregate_tok_s_best": best,
        "aggregate_tok_s_median": median,
        "per_stream_tok_s_best": best / clients,
        "per_stream_tok_s_median": median / clients,
    }


def compare(
    backends: dict[str, TargetBackend], prompts: list[tuple[int, ...]], drafter: Drafter,
    args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    from edgespec.runtime.wire.inprocess import target_greedy_decode

    n, counts = args.max_new_tokens, [int(c) for c in args.clients.split(",")]
    times: dict[tuple[str, str, int], list[float]] = {}
    facts: dict[tuple[str, int], dict[str, Any]] = {}
    for warm in backends.values():
        target_greedy_decode(warm, prompts[0], 4)
    for rep in range(args.repeats):
        order = list(backends) if rep % 2 == 0 else list(reversed(backends))
        for name in order:
            backend = backends[name]
            start = time.perf_counter()
            single = target_greedy_decode(backend, prompts[0], n)
            times.setdefault((name, "target_only", 1), []).append(time.perf_counter() - start)
            for c in counts:
                central, c_s, _ = _sessions(backend, prompts[:c], n, args.gamma, None)
                spec, s_s, rounds = _sessions(backend, prompts[:c], n, args.gamma, drafter)
                same = spec == central and central[0] == single
                assert same or name.endswith("lossy"), f"{name}: outputs differ at c={c}"
                times.setdefault((name, "centralized", c), []).append(c_s)
                times.setdefault((name, "distributed_sd", c), []).append(s_s)
                tokens = sum(len(o) for o in spec)
                facts[(name, c)] = {"tokens": tokens, "sd_rounds": rounds,
                                    "tokens_per_round": tokens / rounds / c,
                                    "identical": same and facts.get((name, c), {}).get(
                                        "identical", True)}  # fmt: skip
            print(f"repeat {rep} {name} done", flush=True)
    rows = []
    for (name, mode, c), ts in sorted(times.items()):
        tokens = n if mode == "target_only" else facts[(name, c)]["tokens"]
        row = {"backend": name, "mode": mode, "clients": c, "tokens": tokens, "seconds": ts}
        if mode == "distributed_sd":
            row["tokens_per_round_per_session"] = facts[(name, c)]["tokens_per_round"]
            row["outputs_identical"] = facts[(name, c)]["identical"]
        rows.append({**row, **_rates(ts, tokens, c)})
    return {"rows": rows}


def profile_llamacpp(backend: TargetBackend) -> dict[str, Any]:
    """WISP Eq. 19 fitted on ``backend`` (reduced App. C grid), held-out metrics."""
    from edgespec.profiling.grid import GridSpec, design_grid
    from edgespec.profiling.measure import measure_grid
    from edgespec.profiling.run import median_runs

    spec = GridSpec(
        cold_totals=(100, 200, 300),
        new_tokens=(1, 5, 10, 20, 50),
        totals=(120, 240),
        memory_batch_sizes=(1, 2),
        max_batch_size=6,
        num_random=6,
        num_mixed=6,
        num_test=15,
        warmup_runs=1,
        runs=2,
    )
    grid = design_grid(spec)
    start = time.perf_counter()
    samples, _ = measure_grid(backend, grid, spec)
    points = median_runs(samples)
    return {
        "grid": {
            k: getattr(spec, k)
            for k in (
                "cold_totals",
                "new_tokens",
                "totals",
                "max_batch_size",
                "num_random",
                "num_mixed",
                "num_test",
                "runs",
            )
        },
        "configs": len(grid),
        "seconds": time.perf_counter() - start,
        "points": [
            [grid[s.config_index].category, grid[s.config_index].split, s.entries, s.time_s]
            for s in points
        ],
    }


def fits(points: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Eq. 19 on the profile's median points, and Eq. 19 plus a term per logit row (the
    LM head's rows: a follow-up's every new token, a cold start's draft + 1 as the profile
    sends them), both trained on the 'train' configurations, scored on the held-out ones."""
    from edgespec.policies.estimator import BatchShape
    from edgespec.profiling.fit import WISP_TERMS, fit_linear, wisp_design

    entries = [[tuple(e) for e in p[2]] for p in points]
    split = np.array([p[1] for p in points])
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    y = np.array([float(p[3]) for p in points])
    x = wisp_design([BatchShape.of(e) for e in entries])
    rows = [sum(n if c else min(4, n // 2) + 1 for n, c in e) for e in entries]
    out = {}
    designs = {"eq19": (WISP_TERMS, x),
               "eq19_plus_head_rows": ((*WISP_TERMS, "h_s_per_logit_row"),
                                       np.column_stack([x, rows]))}  # fmt: skip
    for name, (terms, design) in designs.items():
        fit = fit_linear(terms, design, y, train, test, np.random.default_rng(0), 200)
        out[name] = {
            "coefficients": fit.as_dict(),
            "train": {"r2": fit.train.r2, "mape_pct": fit.train.mape_pct},
            "held_out": {"r2": fit.test.r2, "mape_pct": fit.test.mape_pct,
                         "n": fit.test.num_samples, "mape_pct_95": fit.test_intervals[2]},
        }  # fmt: skip
    return out


def main() -> int:
    args = _arguments()
    if args.refit is not None:
        saved = json.loads(args.refit.read_text())
        profile = saved["wisp_eq19_llamacpp"]
        profile.update(fits(profile["points"]))
        args.refit.write_text(json.dumps(saved, indent=2) + "\n")
        print(json.dumps({k: v for k, v in profile.items() if k != "points"}, indent=2))
        return 0
    import torch

    from edgespec.models.loading import load_model, load_tokenizer
    from edgespec.models.registry import model_file
    from edgespec.runtime.backends.hybrid_draft import HybridDraft
    from edgespec.runtime.backends.llamacpp_backend import LlamaCppTarget
    from edgespec.runtime.backends.llamacpp_context import LlamaCppSettings
    from edgespec.runtime.backends.transformers_backend import TransformersTarget

    torch.set_num_threads(args.threads)
    tokenizer = load_tokenizer("gemma3-270m")
    if tokenizer is None:
        raise SystemExit("gemma3-270m's tokenizer is missing (run `make`)")
    texts = [json.loads(line)["prompt"] for line in PROMPTS.read_text().splitlines()]
    prompts = [tuple(tokenizer(t)["input_ids"]) for t in texts]
    start = time.perf_counter()
    transformers = TransformersTarget(load_model("gemma3-270m").model)
    loads = {"transformers_s": time.perf_counter() - start}
    start = time.perf_counter()
    settings = LlamaCppSettings(model_file("gemma3-270m"), sequences=16, context_tokens=1024,
                                threads=args.threads, exact=not args.lossy)  # fmt: skip
    llama = LlamaCppTarget(settings)
    loads["llamacpp_s"] = time.perf_counter() - start  # includes the self-check
    draft_model = load_model("gemma3-270m-draft").model
    name = "llamacpp-lossy" if args.lossy else "llamacpp"
    backends: dict[str, TargetBackend] = {"transformers": transformers, name: llama}
    report: dict[str, Any] = {
        "command": "python -m benchmarks.llamacpp_compare " + " ".join(sys.argv[1:]),
        "threads": args.threads, "gamma": args.gamma, "max_new_tokens": args.max_new_tokens,
        "prompts": str(PROMPTS.name), "prompt_tokens": [len(p) for p in prompts],
        "load_s": loads, "llamacpp_self_check": llama.inexactness or "bit-identical",
    }  # fmt: skip
    report.update(compare(backends, prompts, lambda: HybridDraft(draft_model), args))
    if not args.skip_profile:
        report["wisp_eq19_llamacpp"] = profile = profile_llamacpp(llama)
        profile.update(fits(profile["points"]))
    text = json.dumps(report, indent=2) + "\n"
    if args.json is not None:
        args.json.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
