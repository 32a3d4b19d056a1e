"""Side by side: distillation data with transformers' generate vs the draft-vocabulary head
(docs/LEARN.md, "The distilled draft").

    python benchmarks/probes/distill_speed.py [NEW_TOKENS] [PROMPTS] [--json PATH]
    # defaults: 24, 16

Runs both on the same GSM8K training prompts (1 torch thread) and prints seconds, tokens
per second and how many rows came out identical (they differ only after a position whose
target argmax lies outside the bundled draft's kept tokens); ``--json PATH`` writes the
same, with the time ratio (``probe_json.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from probe_json import add_json_option, finish, positive_int

from edgespec.datasets.prompts import load_prompts
from edgespec.learn.drafts.distill_data import (
    GenerationSettings,
    encode_prompt,
    generate_batch,
    generate_batch_trimmed,
)
from edgespec.models.loading import load_model
from edgespec.models.trimmed import TrimmedVocabDraft

DRAFT = Path(__file__).resolve().parents[2] / "edgespec/data/drafts/gemma3-270m-draft"


@dataclass(frozen=True, slots=True)
class GenerationRun:
    """One way of generating: its wall time and the rows it wrote."""

    name: str
    seconds: float
    output_ids: tuple[torch.Tensor, ...]

    @property
    def num_tokens(self) -> int:
        return sum(len(o) for o in self.output_ids)

    def line(self) -> str:
        return (f"{self.name}: {self.seconds:.1f} s, {self.num_tokens} tokens, "
                f"{self.num_tokens / self.seconds:.1f} tokens/s")  # fmt: skip


def timed(
    name: str, run: Callable[[], dict[str, list[Any]]], clock: Callable[[], float]
) -> GenerationRun:
    start = clock()
    out = run()
    return GenerationRun(name, clock() - start, tuple(out["output_ids"]))


def identical_rows(first: GenerationRun, second: GenerationRun) -> int:
    pairs = zip(first.output_ids, second.output_ids, strict=True)
    return sum(int(torch.equal(a, b)) for a, b in pairs)


def speed_results(trimmed: GenerationRun, full: GenerationRun) -> dict[str, Any]:
    """The record's numbers: each run's, the time ratio, the identical rows."""
    runs = {
        run.name: {
            "seconds": run.seconds,
            "num_tokens": run.num_tokens,
            "tokens_per_s": run.num_tokens / run.seconds,
        }
        for run in (trimmed, full)
    }
    return {
        "runs": runs,
        "time_ratio": trimmed.seconds / full.seconds,
        "identical_rows": identical_rows(trimmed, full),
        "num_rows": len(full.output_ids),
    }


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="distillation data: generate vs cut head")
    parser.add_argument("new_tokens", nargs="?", type=positive_int, default=24,
                        metavar="NEW_TOKENS")  # fmt: skip
    parser.add_argument("prompts", nargs="?", type=positive_int, default=16, metavar="PROMPTS")
    add_json_option(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    torch.set_num_threads(1)
    target = load_model("gemma3-270m")
    kept = TrimmedVocabDraft.load(DRAFT).config.draft_token_ids
    prompts = load_prompts("gsm8k", "train", args.prompts)
    encoded = [encode_prompt(target.tokenizer, p.text, 256) for p in prompts]
    settings = GenerationSettings(batch_size=args.prompts, max_new_tokens=args.new_tokens)
    trimmed = timed(
        "draft-vocabulary head",
        lambda: generate_batch_trimmed(target.model, encoded, 0, {1}, settings, kept),
        time.perf_counter,
    )
    print(trimmed.line())
    full = timed(
        "transformers generate",
        lambda: generate_batch(target.model, encoded, 0, {1}, settings),
        time.perf_counter,
    )
    print(full.line())
    results = speed_results(trimmed, full)
    print(f"identical rows: {results['identical_rows']}/{len(encoded)}")
    setting = {"new_tokens": args.new_tokens, "prompts": args.prompts, "dataset": "gsm8k train"}
    finish(args.json, "distill_speed.py", argv, {**setting, **results})


if __name__ == "__main__":
    main()
