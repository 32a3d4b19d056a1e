"""A long prompt beside short rounds: the server's prefill in parts
(``prefill_part_tokens``, docs/DEPLOY.md) against one pass, side by side.

Fixed work on Gemma 3 270M (``TransformersTarget``, the exact numerics, one torch thread):
``--short`` greedy sessions on GSM8K test prompts decode ``--max-new-tokens`` each with
n-gram drafts of 4 tokens, each sending its next round as soon as its reply is in, through
a :class:`~edgespec.runtime.server.service.VerificationService` (FCFS, the server's
scheduler, no gRPC); ``--delay-s`` after they start, one session opens a ``--long-tokens``
prompt (GSM8K prompts joined) and sends its first round. Per setting of
``prefill_part_tokens`` (``--parts``, ``none`` = one pass), alternated ``--pairs``
times after a warm-up: the long round's time to its reply, and the short rounds sent while
it was in flight (their wait from send to reply: median and max, and how many). Every
run's outputs must be identical (the parts are lossless).

Usage: ``python benchmarks/prefill_parts.py --out FILE.json``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GAMMA = 4


@dataclass
class _Run:
    """One run's records: each short round's (sent, answered) times, the long round's."""

    short_rounds: list[tuple[float, float]] = field(default_factory=list)
    long_round: tuple[float, float] = (0.0, 0.0)
    outputs: dict[str, list[int]] = field(default_factory=dict)


async def _client(service: Any, sid: str, prompt: tuple[int, ...], max_new: int, run: _Run,
                  is_long: bool) -> None:  # fmt: skip
    import numpy as np

    from edgespec.core.types import SamplingParams
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.messages import SessionSpec, VerifyCall

    service.open_session(SessionSpec(sid, sid, prompt, SamplingParams(max_new_tokens=max_new)))
    drafter, rng, tokens = NgramDrafter(max_ngram=3), np.random.default_rng(0), list(prompt)
    while True:
        draft = tuple(drafter.propose(tokens, GAMMA, 0.0, rng).token_ids)
        sent = time.perf_counter()
        reply = await service.verify(VerifyCall(sid, len(tokens), draft))
        answered = time.perf_counter()
        if is_long and len(tokens) == len(prompt):
            run.long_round = (sent, answered)
        elif not is_long:
            run.short_rounds.append((sent, answered))
        tokens.extend(reply.outcome.committed_token_ids)
        if reply.outcome.finished:
            break
    run.outputs[sid] = tokens[len(prompt) :]
    service.close_session(sid)


async def _one_run(target: Any, prompts: dict[str, Any], parts: int | None, args: Any) -> _Run:
    from edgespec.config import from_dict
    from edgespec.policies.batching import FcfsBatching
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService

    config = from_dict(ServerConfig, {"prefill_part_tokens": parts})
    engine = VerificationEngine(target, prefill_part_tokens=parts)
    service = VerificationService(engine, config, FcfsBatching())
    await service.start()
    run = _Run()
    try:
        shorts = [
            asyncio.ensure_future(_client(service, f"s{i}", p, args.max_new_tokens, run, False))
            for i, p in enumerate(prompts["short"])
        ]
        await asyncio.sleep(args.delay_s)
        await _client(service, "long", prompts["long"], 8, run, True)
        await asyncio.gather(*shorts)
    finally:
        await service.stop()
    return run


def _summary(run: _Run) -> dict[str, Any]:
    """The long round's time and the short rounds sent while it was in flight."""
    start, end = run.long_round
    waits = [b - a for a, b in run.short_rounds if start <= a < end]
    return {
        "long_first_round_s": round(end - start, 3),
        "short_rounds_during": len(waits),
        "short_wait_median_s": round(statistics.median(waits), 3) if waits else None,
        "short_wait_max_s": round(max(waits), 3) if waits else None,
    }


def _prompts(tokenizer: Any, num_short: int, long_tokens: int) -> dict[str, Any]:
    from edgespec.datasets.prompts import prompt_dir

    lines = (prompt_dir() / "gsm8k_test.jsonl").read_text().splitlines()
    texts = [json.loads(line)["prompt"] for line in lines]
    encode = [tuple(tokenizer(t)["input_ids"]) for t in texts[: num_short + 200]]
    long: list[int] = []
    for ids in encode[num_short:]:
        long.extend(ids)
        if len(long) >= long_tokens:
            break
    if len(long) < long_tokens:
        raise SystemExit(f"the GSM8K prompts hold {len(long)} tokens, fewer than {long_tokens}")
    return {"short": encode[:num_short], "long": tuple(long[:long_tokens])}


def measure(args: Any) -> dict[str, Any]:
    import torch

    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.transformers_backend import TransformersTarget

    torch.set_num_threads(1)
    loaded = load_model("gemma3-270m", num_threads=1)
    target = TransformersTarget(loaded.model)
    prompts = _prompts(loaded.tokenizer, args.short, args.long_tokens)
    settings = [None if p == "none" else int(p) for p in args.parts.split(",")]
    asyncio.run(_one_run(target, prompts, settings[-1], args))  # warm-up
    runs: dict[str, list[dict[str, Any]]] = {str(p): [] for p in settings}
    outputs = set()
    for pair in range(args.pairs):
        for parts in settings:
            run = asyncio.run(_one_run(target, prompts, parts, args))
            runs[str(parts)].append(_summary(run))
            outputs.add(json.dumps(run.outputs, sort_keys=True))
            print(f"pair {pair + 1}, parts {parts}: {runs[str(parts)][-1]}", file=sys.stderr)
    return {
        "workload": {
            "model": "gemma3-270m",
            "threads": 1,
            "short_sessions": args.short,
            "short_prompt_tokens": [len(p) for p in prompts["short"]],
            "short_max_new_tokens": args.max_new_tokens,
            "gamma": GAMMA,
            "long_prompt_tokens": args.long_tokens,
            "long_delay_s": args.delay_s,
            "batching": "fcfs",
        },
        "runs": runs,
        "outputs_identical": len(outputs) == 1,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    settings = "prefill_part_tokens settings, none = one pass (default none,512,128)"
    parser.add_argument("--parts", default="none,512,128", help=settings)
    parser.add_argument("--pairs", type=int, default=2, help="alternations (default 2)")
    parser.add_argument("--short", type=int, default=3, help="short sessions (default 3)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="per short session")
    parser.add_argument("--long-tokens", type=int, default=1536, help="the long prompt's length")
    parser.add_argument("--delay-s", type=float, default=1.0, help="when the long prompt comes")
    parser.add_argument("--out", type=Path, help="JSON to write (default: print)")
    args = parser.parse_args(argv)
    command = "python benchmarks/prefill_parts.py " + " ".join(argv or sys.argv[1:])
    result = {"command": command, **measure(args)}
    text = json.dumps(result, indent=2)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text + "\n")
    return 0 if result["outputs_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
