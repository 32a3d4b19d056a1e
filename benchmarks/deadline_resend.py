"""A long prompt's first round past the drafter's request timeout: the call sent again on
the same session (``RoundLoop.verify``, the server's ``Scheduler.take_over``), side by side
with one call that waits.

Fixed work on Gemma 3 270M (``TransformersTarget``, the exact numerics, one torch thread)
behind a loopback gRPC server (FCFS, prefill in parts of ``--parts`` tokens): greedy
generations of ``--max-new-tokens`` with n-gram drafts of 4 tokens from prompts of
``--prompt-tokens`` GSM8K test tokens (prompts joined), through ``RemoteVerifier`` and the
drafter's own round loop. Cases, alternated ``--repeat`` times after a warm-up, each on a
fresh server: ``one-call`` (one generation, a 600 s request timeout: its first call waits
for the whole prefill), ``resent`` (the same generation, a ``--timeout-s`` request
timeout, shorter than its first round) and ``two-at-once`` (two generations of different
prompts started together, ``--timeout-s`` each). Per generation: time to the first token,
to the end, resends and reconnects; per run the server's forwarded tokens, prefill parts
and cache misses. A prompt's output must be the same in every case.

Usage: ``python benchmarks/deadline_resend.py --out FILE.json``
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

GAMMA = 4
CASES = ("one-call", "resent", "two-at-once")


def _generate(port: int, index: int, prompt: tuple[int, ...], timeout_s: float, args: Any) -> Any:
    from edgespec.core.types import SamplingParams
    from edgespec.policies.window import StaticWindow
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    verifier = RemoteVerifier(f"127.0.0.1:{port}", timeout_s=timeout_s)
    try:
        sampling = SamplingParams(max_new_tokens=args.max_new_tokens)
        options = DraftOptions(f"p{index}")
        return generate(verifier, NgramDrafter(max_ngram=3), prompt, sampling, options,
                        StaticWindow(GAMMA))  # fmt: skip
    finally:
        verifier.close_channel()


def _row(result: Any) -> dict[str, Any]:
    request = result.request
    return {
        "first_token_s": round(request.first_token_s - request.arrival_s, 3),
        "total_s": round(request.finish_s - request.arrival_s, 3),
        "resends": result.num_resends,
        "reconnects": result.num_reconnects,
        "output": list(result.output_token_ids),
    }


def one_run(target: Any, prompts: list[tuple[int, ...]], case: str, args: Any) -> dict[str, Any]:
    """One case on a fresh server: a row per generation and the server's counters."""
    from edgespec.config import from_dict
    from edgespec.policies.batching import FcfsBatching
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService
    from edgespec.runtime.wire.server_thread import ServerThread

    config = from_dict(ServerConfig, {"prefill_part_tokens": args.parts})

    def build() -> VerificationService:
        engine = VerificationEngine(target, prefill_part_tokens=args.parts)
        return VerificationService(engine, config, FcfsBatching())

    server = ServerThread(build).start()
    chosen = prompts[:2] if case == "two-at-once" else prompts[:1]
    timeout_s = 600.0 if case == "one-call" else args.timeout_s
    results: list[Any] = [None] * len(chosen)

    def client(i: int) -> None:
        try:
            results[i] = _generate(server.port, i, chosen[i], timeout_s, args)
        except Exception as exc:  # reported in the row
            results[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(chosen))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.service is not None
        counters = server.service.engine.counters()
    finally:
        server.stop()
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise SystemExit(f"{case}: a generation failed: {failed[0]!r}")
    return {
        "generations": [_row(r) for r in results],
        "tokens_forwarded": counters.num_tokens_forwarded,
        "prefill_parts": counters.num_prefill_parts,
        "cache_misses": counters.num_cache_misses,
    }


def _prompts(tokenizer: Any, num_tokens: int) -> list[tuple[int, ...]]:
    """Two prompts of ``num_tokens`` tokens each: GSM8K test prompts joined."""
    from edgespec.datasets.prompts import prompt_dir

    lines = (prompt_dir() / "gsm8k_test.jsonl").read_text().splitlines()
    ids = [i for line in lines[:400] for i in tokenizer(json.loads(line)["prompt"])["input_ids"]]
    if len(ids) < 2 * num_tokens:
        raise SystemExit(f"the GSM8K prompts hold {len(ids)} tokens, fewer than 2 × {num_tokens}")
    return [tuple(ids[:num_tokens]), tuple(ids[num_tokens : 2 * num_tokens])]


def measure(args: Any) -> dict[str, Any]:
    import torch

    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.transformers_backend import TransformersTarget

    torch.set_num_threads(1)
    loaded = load_model("gemma3-270m", num_threads=1)
    target = TransformersTarget(loaded.model)
    prompts = _prompts(loaded.tokenizer, args.prompt_tokens)
    one_run(target, prompts, "one-call", args)  # warm-up
    runs: dict[str, list[dict[str, Any]]] = {case: [] for case in CASES}
    for repeat in range(args.repeat):
        for case in CASES:
            runs[case].append(one_run(target, prompts, case, args))
            shown = [{k: v for k, v in g.items() if k != "output"}
                     for g in runs[case][-1]["generations"]]  # fmt: skip
            print(f"repeat {repeat + 1}, {case}: {shown}", file=sys.stderr)
    firsts = {json.dumps(run["generations"][0]["output"]) for c in CASES for run in runs[c]}
    seconds = {json.dumps(run["generations"][1]["output"]) for run in runs["two-at-once"]}
    return {
        "workload": {
            "model": "gemma3-270m",
            "threads": 1,
            "prompt_tokens": args.prompt_tokens,
            "max_new_tokens": args.max_new_tokens,
            "gamma": GAMMA,
            "prefill_part_tokens": args.parts,
            "request_timeout_s": {
                "one-call": 600.0,
                "resent": args.timeout_s,
                "two-at-once": args.timeout_s,
            },
            "batching": "fcfs",
        },
        "runs": runs,
        "outputs_identical": len(firsts) == len(seconds) == 1,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=2, help="alternations (default 2)")
    parser.add_argument("--prompt-tokens", type=int, default=2042, help="each prompt's length")
    parser.add_argument("--max-new-tokens", type=int, default=16, help="per generation")
    timeout = "the request timeout of resent and two-at-once (default 4)"
    parser.add_argument("--timeout-s", type=float, default=4.0, help=timeout)
    parser.add_argument("--parts", type=int, default=512, help="prefill_part_tokens (512)")
    parser.add_argument("--out", type=Path, help="JSON to write (default: print)")
    args = parser.parse_args(argv)
    command = "python benchmarks/deadline_resend.py " + " ".join(argv or sys.argv[1:])
    result = {"command": command, **measure(args)}
    text = json.dumps(result, indent=2)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text + "\n")
    return 0 if result["outputs_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
