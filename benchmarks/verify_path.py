"""Serve's verification path on the CPU, two versions of edgespec side by side.

Fixed work: 4 GSM8K test prompts (Gemma 3 270M's tokenizer) opened as greedy sessions on a
:class:`~edgespec.runtime.server.engine.VerificationEngine` over ``TransformersTarget`` (the
version's default numerics), n-gram drafts of 4 tokens, every live session's call in one
``verify_batch`` per round until each has 48 tokens: the server's work without gRPC, whose
cost both versions share. Each version runs in its own process (``PYTHONPATH`` = its
checkout), alternated ``--pairs`` times; a process times ``--repeats`` runs after a warm-up
(CPU seconds, one torch thread). The versions' outputs must be identical.

Usage: ``python benchmarks/verify_path.py --versions BASE_CHECKOUT,. --out FILE.json``
(a checkout of an older commit: ``git worktree add --detach DIR COMMIT``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

NUM_SESSIONS, GAMMA, MAX_NEW_TOKENS = 4, 4, 48


def _one_run(target: Any, prompts: list[tuple[int, ...]]) -> tuple[float, list[list[int]]]:
    import numpy as np

    from edgespec.core.types import SamplingParams
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.errors import RequestError
    from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
    from edgespec.runtime.server.engine import VerificationEngine

    engine = VerificationEngine(target)
    outputs: dict[str, list[int]] = {}
    drafters = {}
    for i, prompt in enumerate(prompts):
        sid = f"s{i}"
        engine.open_session(
            SessionSpec(sid, "c", prompt, SamplingParams(max_new_tokens=MAX_NEW_TOKENS))
        )
        drafters[sid], outputs[sid] = NgramDrafter(max_ngram=3), []
    live, rng = set(drafters), np.random.default_rng(0)
    start = time.process_time()
    while live:
        calls = []
        for sid in sorted(live):
            context = engine.session_tokens(sid)
            draft = drafters[sid].propose(context, GAMMA, 0.0, rng).token_ids
            call = VerifyCall(sid, len(context), tuple(draft))
            engine.validate(call, 32)
            calls.append(call)
        for call, outcome in zip(calls, engine.verify_batch(calls), strict=True):
            if isinstance(outcome, RequestError):
                raise outcome
            assert isinstance(outcome, VerifyOutcome), outcome  # no prefill parts by default
            outputs[call.session_id].extend(outcome.committed_token_ids)
            if outcome.finished:
                live.discard(call.session_id)
    return time.process_time() - start, [outputs[s] for s in sorted(outputs)]


def child(repeats: int) -> dict[str, Any]:
    """This process's version: ``repeats`` timed runs after a warm-up."""
    import torch

    from edgespec.datasets.prompts import prompt_dir
    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.transformers_backend import TransformersTarget

    torch.set_num_threads(1)
    loaded = load_model("gemma3-270m", num_threads=1)
    target = TransformersTarget(loaded.model, check_masks=False)  # the probes are not timed
    lines = (prompt_dir() / "gsm8k_test.jsonl").read_text().splitlines()[:NUM_SESSIONS]
    prompts = [tuple(loaded.tokenizer(json.loads(line)["prompt"])["input_ids"]) for line in lines]
    _one_run(target, prompts)
    runs = [_one_run(target, prompts) for _ in range(repeats)]
    return {"cpu_s": [t for t, _ in runs], "outputs": runs[-1][1]}


def _run_version(checkout: str, repeats: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(checkout).resolve())}
    command = [sys.executable, __file__, "--child", "--repeats", str(repeats)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _commit(checkout: str) -> str:
    """The checkout's commit (``+`` when its tracked files differ from it)."""
    git = ["git", "-C", checkout]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD"], capture_output=True).returncode
    return head.stdout.strip() + ("+" if dirty else "")


def compare(versions: list[str], pairs: int, repeats: int) -> dict[str, Any]:
    """Alternate the versions ``pairs`` times; the second's median CPU time over the first's."""
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in versions}
    for pair in range(pairs):
        for version in versions:
            runs[version].append(_run_version(version, repeats))
            median = statistics.median(runs[version][-1]["cpu_s"])
            print(f"pair {pair + 1}: {version}: median {median:.3f} CPU s", file=sys.stderr)
    base, new = versions
    ratios = [
        statistics.median(n["cpu_s"]) / statistics.median(b["cpu_s"])
        for b, n in zip(runs[base], runs[new], strict=True)
    ]
    outputs = {json.dumps(r["outputs"]) for v in versions for r in runs[v]}
    return {
        "workload": {"sessions": NUM_SESSIONS, "gamma": GAMMA, "max_new_tokens": MAX_NEW_TOKENS},
        "versions": versions,
        "commits": {v: _commit(v) for v in versions},
        "cpu_s": {v: [r["cpu_s"] for r in runs[v]] for v in versions},
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
        "outputs_identical": len(outputs) == 1,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--versions", help="BASE,NEW: two checkouts (directories)")
    parser.add_argument("--pairs", type=int, default=3, help="alternations (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs a process (default 3)")
    parser.add_argument("--out", type=Path, help="JSON to write (default: print)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.repeats)))
        return 0
    versions = str(args.versions or "").split(",")
    if len(versions) != 2:
        parser.error("--versions needs two checkouts, BASE,NEW")
    result = compare(versions, args.pairs, args.repeats)
    text = json.dumps(result, indent=1)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text + "\n")
    print(
        f"{versions[1]} / {versions[0]}: median ratio {result['median_ratio']:.3f}, "
        f"outputs identical: {result['outputs_identical']}",
        file=sys.stderr,
    )
    return 0 if result["outputs_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
