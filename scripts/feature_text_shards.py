"""Token-sequence shards of training text, for `edgespec train feature-draft --data-dir`.

    python scripts/feature_text_shards.py OUT_DIR [CONVERSATIONS] [MAX_TOKENS]

A feature draft learns from the target's own features at every position, so any text
serves as training data without labelling: each ShareGPT *training-split* conversation
(`User: …\\nAssistant: …`) and each GSM8K / CNN-DM / HumanEval training prompt becomes one
sequence of at most MAX_TOKENS tokens (BOS first). Its first 32 tokens are written as
`prompt_ids` (so the prompt hold-out of the training command separates texts) and the rest
as `output_ids`, 64 sequences per `shard_*.pt`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from edgespec.learn.distill_text import encode_text, sharegpt_conversations
from edgespec.learn.prompts import load_prompts
from edgespec.models.loading import load_model

PROMPT_TOKENS = 32


def main() -> None:
    out = Path(sys.argv[1])
    conversations = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    max_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    tokenizer = load_model("gemma3-270m").tokenizer
    texts = list(sharegpt_conversations(limit=conversations))
    for name in ("gsm8k", "cnndm", "humaneval"):
        texts += [p.text for p in load_prompts(name, "train")]
    sequences = [encode_text(tokenizer, t, max_tokens) for t in texts]
    sequences = [s for s in sequences if len(s) > PROMPT_TOKENS + 8]
    out.mkdir(parents=True, exist_ok=True)
    for index in range(0, len(sequences), 64):
        chunk = sequences[index : index + 64]
        torch.save(
            {
                "prompt_ids": [torch.tensor(s[:PROMPT_TOKENS]) for s in chunk],
                "output_ids": [torch.tensor(s[PROMPT_TOKENS:]) for s in chunk],
            },
            out / f"shard_{index // 64:05d}.pt",
        )
    print(f"{len(sequences)} sequences, {sum(map(len, sequences))} tokens -> {out}")


if __name__ == "__main__":
    main()
