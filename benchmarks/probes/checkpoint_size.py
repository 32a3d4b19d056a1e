"""How big `edgespec train draft`'s training checkpoint is and how long one save takes, for
the default draft (K 8,192, hidden size 256, 3 blocks, 4 heads, MLP 768) over a vocabulary
of Gemma 3 270M's size (262,144 x 640 embeddings, random: the size does not depend on the
values) after one AdamW step (docs/LEARN.md, "Training resumes where it stopped").

    python benchmarks/probes/checkpoint_size.py

Prints the checkpoint's size in MB and the seconds of one save (the median of 5).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import torch

from edgespec.learn.drafts.checkpoint import CHECKPOINT_NAME
from edgespec.learn.drafts.checkpointing import Checkpointer
from edgespec.learn.drafts.distill import DraftArchitecture, TrainSettings, init_draft, train_draft
from edgespec.learn.drafts.samples import Sample

VOCAB, WIDTH = 262_144, 640


def main() -> None:
    torch.manual_seed(0)
    special = {"bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0}
    arch = DraftArchitecture()
    draft = init_draft(
        torch.randn(VOCAB, WIDTH), range(arch.num_kept_tokens), arch, special, "probe"
    )
    output = torch.arange(10, 40)
    samples = [Sample(torch.tensor([2, 5, 6]), output, output[:, None], torch.zeros(30, 1))]
    with tempfile.TemporaryDirectory() as folder:
        run = Checkpointer(Path(folder) / CHECKPOINT_NAME, {}, "", every_s=float("inf"))
        train_draft(draft, samples, TrainSettings(epochs=1), None, run)
        seconds = []
        for _ in range(5):
            start = time.perf_counter()
            run.save()
            seconds.append(time.perf_counter() - start)
        size_mb = (Path(folder) / CHECKPOINT_NAME).stat().st_size / 1e6
    print(f"checkpoint {size_mb:.1f} MB, one save {statistics.median(seconds):.2f} s (median of 5)")


if __name__ == "__main__":
    main()
