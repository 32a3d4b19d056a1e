"""Long prompts beside short rounds: the server's prefill in parts
(``prefill_part_tokens``, docs/DEPLOY.md) against one pass, and the batching policy that
orders the parts (``fcfs``, ``decodes-first``, one parameter set as
``decodes-first:max_prefill_tokens=1024``), side by side.

Fixed work on Gemma 3 270M (``TransformersTarget``, the exact numerics, one torch thread):
``--short`` greedy sessions on GSM8K test prompts decode ``--max-new-tokens`` each with
n-gram drafts of 4 tokens, each sending its next round as soon as its reply is in, through
a :class:`~edgespec.runtime.server.service.VerificationService` (the server's scheduler,
no gRPC, ``--max-batch-tokens`` a batch); ``--delay-s`` after they start, ``--long``
sessions open a ``--long-tokens`` prompt each (GSM8K prompts joined, different ones) and
send their first rounds together. Per setting of ``prefill_part_tokens`` (``--parts``,
``none`` = one pass) and batching policy (``--batching``), alternated ``--pairs`` times
after a warm-up: the time from the first long round's sending to the last one's reply,
and the short rounds sent meanwhile (their wait from send to reply: median and max, and
how many). Every run's outputs must be identical (the parts are lossless, and the order
of the batches changes no session's tokens).

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
    long_rounds: list[tuple[float, float]] = field(default_factory=list)
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
            run.long_rounds.append((sent, answered))
        elif not is_long:
            run.short_rounds.append((sent, answered))
        tokens.extend(reply.outcome.committed_token_ids)
        if reply.outcome.finished:
            break
    run.outputs[sid] = tokens[len(prompt) :]
    service.close_session(sid)


async def _one_run(
    target: Any, prompts: dict[str, Any], parts: int | None, batching: str, args: Any
) -> _Run:
    from edgespec.config import from_dict
    from edgespec.policies.registry import build_policy
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService

    settings = {"prefill_part_tokens": parts, "max_batch_tokens": args.max_batch_tokens}
    config = from_dict(ServerConfig, settings)
    engine = VerificationEngine(target, prefill_part_tokens=parts)
    name, params = _policy_spec(batching)
    service = VerificationService(engine, config, build_policy("batching", name, params))
    await service.start()
    run = _Run()
    try:
        shorts = [
            asyncio.ensure_future(_client(service, f"s{i}", p, args.max_new_tokens, run, False))
            for i, p in enumerate(prompts["short"])
        ]
        await asyncio.sleep(args.delay_s)
        await asyncio.gather(
            *(_client(service, f"long{i}", p, 8, run, True) for i, p in enumerate(prompts["long"]))
        )
        await asyncio.gather(*shorts)
    finally:
        await service.stop()
    return run


def _summary(run: _Run) -> dict[str, Any]:
    """The time from the first long round's sending to the last one's reply, and the short
    rounds sent meanwhile."""
    start, end = min(a for a, _ in run.long_rounds), max(b for _, b in run.long_rounds)
    waits = [b - a for a, b in run.short_rounds if start <= a < end]
    return {
        "long_first_round_s": round(end - start, 3),
        "short_rounds_during": len(waits),
        "short_wait_median_s": round(statistics.median(waits), 3) if waits else None,
        "short_wait_max_s": round(max(waits), 3) if waits else None,
    }


def _prompts(tokenizer: Any, num_short: int, num_long: int, long_tokens: int) -> dict[str, Any]:
    """The first ``num_short`` GSM8K test prompts, and ``num_long`` prompts of
    ``long_tokens`` tokens from the others joined in a ring, each starting at its own
    place (``num_long`` evenly spaced starts)."""
    from edgespec.datasets.prompts import prompt_dir

    lines = (prompt_dir() / "gsm8k_test.jsonl").read_text().splitlines()
    encode = [tuple(tokenizer(json.loads(line)["prompt"])["input_ids"]) for line in lines]
    ring = [t for ids in encode[num_short:] for t in ids]
    if len(ring) < long_tokens:
        raise SystemExit(f"the GSM8K prompts hold {len(ring)} tokens, fewer than {long_tokens}")
    starts = [i * len(ring) // num_long for i in range(num_long)]
    longs = [tuple((ring + ring)[s : s + long_tokens]) for s in starts]
    return {"short": encode[:num_short], "long": longs}


def measure(args: Any) -> dict[str, Any]:
    import torch

    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.transformers_backend import TransformersTarget

    torch.set_num_threads(1)
    loaded = load_model("gemma3-270m", num_threads=1)
    target = TransformersTarget(loaded.model)
    prompts = _prompts(loaded.tokenizer, args.short, args.long, args.long_tokens)
    sizes = [None if p == "none" else int(p) for p in args.parts.split(",")]
    settings = [(parts, name) for parts in sizes for name in args.batching.split(",")]
    asyncio.run(_one_run(target, prompts, *settings[-1], args))  # warm-up
    runs: dict[str, list[dict[str, Any]]] = {_key(*s): [] for s in settings}
    outputs = set()
    for pair in range(args.pairs):
        for parts, name in settings:
            run = asyncio.run(_one_run(target, prompts, parts, name, args))
            key = _key(parts, name)
            runs[key].append(_summary(run))
            outputs.add(json.dumps(run.outputs, sort_keys=True))
            print(f"pair {pair + 1}, {key}: {runs[key][-1]}", file=sys.stderr)
    return {
        "workload": {
            "model": "gemma3-270m",
            "threads": 1,
            "short_sessions": args.short,
            "short_prompt_tokens": [len(p) for p in prompts["short"]],
            "short_max_new_tokens": args.max_new_tokens,
            "gamma": GAMMA,
            "long_prompts": args.long,
            "long_prompt_tokens": args.long_tokens,
            "long_delay_s": args.delay_s,
            "max_batch_tokens": args.max_batch_tokens,
        },
        "runs": runs,
        "outputs_identical": len(outputs) == 1,
    }


def _policy_spec(batching: str) -> tuple[str, dict[str, Any]]:
    """``NAME`` or ``NAME:PARAM=VALUE`` (a JSON value, e.g.
    ``decodes-first:max_prefill_tokens=1024``) as the policy's name and parameters."""
    name, _, setting = batching.partition(":")
    if not setting:
        return name, {}
    param, _, value = setting.partition("=")
    return name, {param: json.loads(value)}


def _key(parts: int | None, batching: str) -> str:
    """A setting's name in the JSON: ``"512"`` under FCFS, ``"512 decodes-first"``."""
    return str(parts) if batching == "fcfs" else f"{parts} {batching}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    settings = "prefill_part_tokens settings, none = one pass (default none,512,128)"
    parser.add_argument("--parts", default="none,512,128", help=settings)
    parser.add_argument("--pairs", type=int, default=2, help="alternations (default 2)")
    parser.add_argument("--short", type=int, default=3, help="short sessions (default 3)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="per short session")
    parser.add_argument(
        "--batching", default="fcfs",
        help="batching policies, each NAME or NAME:PARAM=VALUE (default fcfs)",
    )  # fmt: skip
    parser.add_argument("--long", type=int, default=1, help="long prompts at once (default 1)")
    parser.add_argument("--long-tokens", type=int, default=1536, help="each long prompt's length")
    parser.add_argument("--max-batch-tokens", type=int, default=4096, help="a batch's tokens")
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
