"""A cold start (a prompt's prefill) on Gemma 3 270M (CPU), exact against lossy numerics
(docs/PERFORMANCE.md, "Backend A/B measurements"; README, "The speed you will see").

    python benchmarks/probes/cold_start.py [THREADS] [LENGTHS] [REPEATS] [--json PATH]
    # defaults: 1 thread, prompts of 256,1024,2040 tokens, 2 repeats

Loads the target twice, once per numerics (the exact mode's batch-invariant layers replace
the model's own in place), without their self-checks; then, for each prompt length, times
one cold start (no KV, the last position's logits) in each numerics, in the target's
chunks of ``PREFILL_CHUNK_TOKENS`` new tokens a pass and, where the prompt is longer, in
one pass of up to 2,048 (the earlier default), alternately, ``REPEATS`` times each; prints
(and writes to ``--json PATH`` with the command and host, :mod:`probe_json`) the median
seconds of each, the ratios, whether each numerics' runs (chunked or not) chose the same
next token with the same logit, and whether both numerics chose the same token. The
prompt is GSM8K's first question repeated to the length.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import torch
from probe_json import add_json_option, finish, int_list, positive_int

from edgespec.datasets.prompts import load_prompts
from edgespec.models.loading import load_model
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.padding import PREFILL_CHUNK_TOKENS
from edgespec.runtime.backends.transformers_backend import TransformersTarget


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("threads", nargs="?", type=positive_int, default=1, metavar="THREADS")
    parser.add_argument(
        "lengths", nargs="?", type=int_list, default=[256, 1024, 2040], metavar="LENGTHS"
    )
    parser.add_argument("repeats", nargs="?", type=positive_int, default=2, metavar="REPEATS")
    add_json_option(parser)
    return parser.parse_args(argv)


def prompt_ids(tokenizer: Any, length: int) -> tuple[int, ...]:
    """GSM8K's first question's tokens, repeated to ``length`` (BOS first)."""
    text = load_prompts("gsm8k", "test", limit=1)[0].text
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    repeated = [tokenizer.bos_token_id] + ids * (length // max(1, len(ids)) + 1)
    return tuple(repeated[:length])


ONE_PASS_TOKENS = 2048


def timed(target: TransformersTarget, ids: tuple[int, ...]) -> tuple[float, tuple[int, float]]:
    """Seconds of one cold start over ``ids``, the token it chose and that token's logit."""
    start = time.perf_counter()
    out = target.forward([ForwardItem(None, 0, ids, 1)])[0]
    seconds = time.perf_counter() - start
    last = out.logits[-1]
    return seconds, (int(last.argmax()), float(last.max()))


def measure(
    targets: dict[str, TransformersTarget], ids: tuple[int, ...], repeats: int
) -> dict[str, Any]:
    """One prompt's row: the median seconds of each numerics in chunks (and in one pass
    where that differs), the ratios, and whether the runs chose alike."""
    chunks = [PREFILL_CHUNK_TOKENS] + ([ONE_PASS_TOKENS] if len(ids) > PREFILL_CHUNK_TOKENS else [])
    seconds: dict[str, list[float]] = {}
    chosen: dict[str, set[tuple[int, float]]] = {name: set() for name in targets}
    for _ in range(repeats):
        for chunk in chunks:
            for numerics, target in targets.items():
                target._chunk = chunk  # the probe's one reach inside: the chunk of a pass
                spent, choice = timed(target, ids)
                key = numerics if chunk == PREFILL_CHUNK_TOKENS else f"{numerics}_one_pass"
                seconds.setdefault(key, []).append(spent)
                chosen[numerics].add(choice)
    medians = {f"{key}_s": round(statistics.median(s), 3) for key, s in seconds.items()}
    row: dict[str, Any] = {"prompt_tokens": len(ids), **medians}
    row["exact_over_lossy"] = round(medians["exact_s"] / medians["lossy_s"], 2)
    for numerics in targets if len(chunks) > 1 else ():
        row[f"{numerics}_chunked_over_one_pass"] = round(
            medians[f"{numerics}_s"] / medians[f"{numerics}_one_pass_s"], 2
        )
    row["same_logit_every_run"] = all(len(choices) == 1 for choices in chosen.values())
    row["same_next_token"] = len({token for c in chosen.values() for token, _ in c}) == 1
    return row


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    torch.set_num_threads(args.threads)
    loaded = load_model("gemma3-270m")
    targets = {
        numerics: TransformersTarget(
            load_model("gemma3-270m").model if numerics == "exact" else loaded.model,
            check_masks=False,
            numerics=numerics,
        )
        for numerics in ("exact", "lossy")
    }
    rows: list[dict[str, Any]] = []
    for length in args.lengths:
        rows.append(measure(targets, prompt_ids(loaded.tokenizer, length), args.repeats))
        print(json.dumps(rows[-1]), flush=True)
    results = {"model": "gemma3-270m", "chunk_tokens": PREFILL_CHUNK_TOKENS, "rows": rows}
    finish(args.json, "cold_start.py", argv, results)


if __name__ == "__main__":
    main()
