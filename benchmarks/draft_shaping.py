"""How often the bundled draft proposes what Gemma 3 270M keeps, with its rows shaped by the
request (edgespec/runtime/backends/draft_shaping.py) and as they are, exactly (no draws).

    .venv/bin/python -m benchmarks.draft_shaping --json benchmarks/results/draft-shaping.json

The target decodes each of the first ``--prompts`` held-out prompts
(edgespec/data/prompts/general_test.jsonl) greedily for ``--max-new-tokens`` tokens; one
forward pass of the target and one of the draft over each whole sequence give both rows at
every output position. At each position, under each request setting: greedy, whether the
draft's argmax (unshaped, and shaped) is the target's argmax after the setting's penalties;
sampling, the expected acceptance of a drafted token, the sum over tokens of min(p, q), p
the target's shaped and cut distribution, q the draft's unshaped or shaped one. The JSON
holds each setting's mean over positions, both ways.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.models.loading import load_model
from edgespec.runtime.backends.draft_shaping import DraftShaping, TokenColumns
from edgespec.runtime.sampling import logits_to_probs

PROMPTS = Path(__file__).resolve().parents[1] / "edgespec/data/prompts/general_test.jsonl"
SETTINGS: dict[str, tuple[float, dict[str, Any]]] = {
    "repetition 1.1": (0.0, {"repetition_penalty": 1.1}),
    "repetition 1.3": (0.0, {"repetition_penalty": 1.3}),
    "frequency 0.5, presence 0.5": (0.0, {"frequency_penalty": 0.5, "presence_penalty": 0.5}),
    "T 0.8, top_p 0.8": (0.8, {"top_p": 0.8}),
    "T 0.8, top_p 0.95": (0.8, {"top_p": 0.95}),
    "T 0.8, top_k 5": (0.8, {"top_k": 5}),
    "T 0.8, top_k 40": (0.8, {"top_k": 40}),
    "T 1, min_p 0.05": (1.0, {"min_p": 0.05}),
    "T 1, min_p 0.1": (1.0, {"min_p": 0.1}),
    "T 0.8, top_p 0.9, repetition 1.1": (0.8, {"top_p": 0.9, "repetition_penalty": 1.1}),
}
"""Each request setting: its temperature (0: greedy) and its DraftShaping fields."""

Rows = tuple[int, list[int], npt.NDArray[np.float32], npt.NDArray[np.float32]]
"""A sequence's prompt length, its tokens, the target's and the draft's rows over it."""


def _rows(prompts: list[str], max_new_tokens: int) -> tuple[list[Rows], TokenColumns | None]:
    target = load_model("gemma3-270m", "float32", num_threads=1, require_tokenizer=True)
    draft = load_model("gemma3-270m-draft", "float32", num_threads=1, target=target)
    trimmed = hasattr(draft.model, "trimmed_forward")
    found: list[Rows] = []
    with torch.inference_mode():
        for prompt in prompts:
            ids = target.tokenizer(prompt, return_tensors="pt")["input_ids"]
            seq = target.model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False)
            whole = seq[:, :-1]  # each row predicts the next token
            target_rows = target.model(whole).logits[0].float().numpy()
            if trimmed:
                draft_rows = draft.model.trimmed_forward(whole, use_cache=False)[0][0]
            else:
                draft_rows = draft.model(whole).logits[0]
            found.append((int(ids.shape[1]), seq[0].tolist(), target_rows,
                          draft_rows.float().numpy()))  # fmt: skip
    if not trimmed:
        return found, None
    every = torch.arange(found[0][3].shape[1])
    return found, TokenColumns.of(draft.model.to_target_ids(every).numpy())


def _full(q: npt.NDArray[np.float64], columns: TokenColumns | None, vocab: int) -> Any:
    """``q`` over the target's ``vocab`` (zero where the draft has no column)."""
    full = np.zeros(vocab)
    if columns is None:
        full[: q.shape[0]] = q
    else:
        full[columns.target_ids] = q
    return full


def _position(
    shaping: DraftShaping, temperature: float, rows: Rows, j: int, columns: TokenColumns | None
) -> tuple[float, float]:
    """(unshaped, shaped) at output position ``j`` of ``rows``: a greedy match (0 or 1) or
    the expected acceptance of a sampled draft token."""
    _, seq, target_rows, draft_rows = rows
    context = seq[: j + 1]
    target_logits = shaping.logits(target_rows[j], context)
    if temperature == 0:
        chosen = int(np.argmax(target_logits))
        ids = (lambda c: c) if columns is None else (lambda c: int(columns.target_ids[c]))
        plain = ids(int(np.argmax(draft_rows[j])))
        shaped = ids(shaping.argmax(draft_rows[j], context, columns))
        return float(plain == chosen), float(shaped == chosen)
    p = logits_to_probs(target_logits[None], temperature, top_p=shaping.top_p,
                        top_k=shaping.top_k, min_p=shaping.min_p)[0]  # fmt: skip
    vocab = p.shape[0]
    plain_q = _full(logits_to_probs(draft_rows[j][None], temperature)[0], columns, vocab)
    shaped_q = _full(shaping.probs(draft_rows[j], context, temperature, columns), columns, vocab)
    return float(np.minimum(p, plain_q).sum()), float(np.minimum(p, shaped_q).sum())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    lines = PROMPTS.read_text().splitlines()[: args.prompts]
    all_rows, columns = _rows([json.loads(line)["prompt"] for line in lines], args.max_new_tokens)
    results: dict[str, dict[str, float | int]] = {}
    for name, (temperature, fields) in SETTINGS.items():
        pairs = [
            _position(DraftShaping(num_prompt, **fields), temperature, rows, j, columns)
            for rows in all_rows
            for num_prompt in (rows[0],)
            for j in range(num_prompt - 1, len(rows[1]) - 1)
        ]
        plain, shaped = np.mean(pairs, axis=0)
        kind = "greedy match" if temperature == 0 else "expected acceptance"
        results[name] = {"positions": len(pairs), "unshaped": round(float(plain), 4),
                         "shaped": round(float(shaped), 4)}  # fmt: skip
        print(f"{name:34s} {kind}: unshaped {plain:.3f}, shaped {shaped:.3f} "
              f"({len(pairs)} positions)", flush=True)  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": "gemma3-270m", "draft": "gemma3-270m-draft",
                                     "prompts": args.prompts,
                                     "max_new_tokens": args.max_new_tokens,
                                     "settings": results}, indent=1) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
