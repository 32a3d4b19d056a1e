"""Offline: what accepted length per round could token-tree verification reach with the
distilled draft (and a prompt-lookup chain), at depth γ = 4? (docs/LEARN.md, "What would
reach AAL 2.5")

    python benchmarks/probes/tree_bound.py [DRAFT_DIR] [PROMPTS] [THREADS] [--json PATH]

Uses the greedy target outputs of benchmarks/probes/hybrid_rules.py (generated and cached there
on first use). At every output position
the draft's top-4 (teacher-forced on the target's prefix) and the lookup(8, 2) proposal are
computed. A tree with branching (b1, ..., b4) holds the draft's top-b_d tokens under every
depth-(d-1) node on the path; with ``+ lookup`` a lookup chain of γ tokens is verified too.
Under greedy verification a round accepts depth d when the target's token is among the
surviving candidates there, so the replay below is exact for the draft tree (the per-position
lookup proposal approximates a lookup chain's continuation, as in hybrid_rules.py). Node
counts are the tokens one round verifies (draft tree + lookup chain, duplicates counted).
``--json PATH`` writes the same numbers (``probe_json.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from edgespec.models.trimmed import TrimmedVocabDraft
from edgespec.runtime.backends.ngram import suffix_match_next

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hybrid_rules import NEW_TOKENS, arguments, draft_and_outputs, setting
from probe_json import finish

GAMMA = 4
# per position: (target token, draft top-4 target ids, lookup proposal or None)
Pos = tuple[int, tuple[int, ...], int | None]
SHAPES = ((1, 1, 1, 1), (2, 1, 1, 1), (2, 2, 1, 1), (3, 2, 1, 1), (2, 2, 2, 2), (4, 2, 2, 1),
          (3, 3, 3, 3), (4, 4, 4, 4))  # fmt: skip


def positions(draft: TrimmedVocabDraft, prompt: list[int], output: list[int]) -> list[Pos]:
    seq = prompt + output
    with torch.no_grad():
        logits, _ = draft.trimmed_forward(torch.tensor([seq]), use_cache=False)
    top = draft.to_target_ids(logits[0].float().topk(4, -1).indices)
    out = []
    for j, token in enumerate(output):
        p = len(prompt) + j - 1
        context = seq[: len(prompt) + j]
        out.append((token, tuple(top[p].tolist()), suffix_match_next(context, 8, 2)))
    return out


def accepted_lengths(seq: list[Pos], shape: tuple[int, ...], lookup: bool) -> list[int]:
    """Greedy rounds over one output, with the runtime's budget-capped window."""
    lengths, pos = [], 0
    while pos < len(seq):
        window = min(GAMMA, NEW_TOKENS - pos - 1)  # as the runtime: none past the budget
        draft_alive, lookup_alive, length = True, lookup, 0
        while length < window and pos + length < len(seq):
            token, top, proposal = seq[pos + length]
            draft_alive = draft_alive and token in top[: shape[length]]
            lookup_alive = lookup_alive and proposal == token
            if not (draft_alive or lookup_alive):
                break
            length += 1
        lengths.append(length)
        pos += length + 1
    return lengths


def nodes(shape: tuple[int, ...], lookup: bool) -> int:
    total, width = 0, 1
    for b in shape:
        width *= b
        total += width
    return total + (GAMMA if lookup else 0)


def tree_row(
    seqs: Mapping[str, list[list[Pos]]], shape: tuple[int, ...], lookup: bool
) -> dict[str, Any]:
    """One tree's nodes per round and AAL per dataset, then over all rounds."""
    aal: dict[str, float] = {}
    every: list[int] = []
    for name, reqs in seqs.items():
        lengths = [n for s in reqs for n in accepted_lengths(s, shape, lookup)]
        every += lengths
        aal[name] = sum(lengths) / len(lengths)
    aal["all"] = sum(every) / len(every)
    return {"shape": list(shape), "lookup": lookup, "nodes": nodes(shape, lookup), "aal": aal}


def row_text(row: Mapping[str, Any]) -> str:
    label = f"{tuple(row['shape'])}{' + lookup' if row['lookup'] else ''}"
    cells = "  ".join(f"{n} {a:.2f}" for n, a in row["aal"].items())
    return f"{label}: {row['nodes']} nodes; {cells}"


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = arguments("offline AAL bound of token trees at depth 4").parse_args(argv)
    draft, data = draft_and_outputs(args)
    seqs = {name: [positions(draft, p, o) for p, o in items] for name, items in data.items()}
    print("tree (branching per depth)[+ lookup chain]: nodes verified per round; AAL per "
          "dataset, then all")  # fmt: skip
    rows = [tree_row(seqs, shape, lookup) for lookup in (False, True) for shape in SHAPES]
    for row in rows:
        print(row_text(row))
    finish(args.json, "tree_bound.py", argv, {**setting(args), "gamma": GAMMA, "trees": rows})


if __name__ == "__main__":
    main()
