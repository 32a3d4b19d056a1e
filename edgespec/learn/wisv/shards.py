"""``wisv-data``'s resumable store: one small ``.npz`` per captured prompt in a folder
beside ``--out`` (``NAME.parts/`` for ``NAME.npz``), so a stopped run continues where it
stopped.

The folder's ``run.json`` holds the settings that decide a prompt's rows (pair, dataset,
frame, γ, token limits, the rollout head's SHA-256, threshold, channel and seed). A run
with other settings on the same folder stops with an error rather than mixing rows. A
prompt whose shard exists is not captured again. Each shard is written to a temporary
name and renamed, so a stopped run leaves only whole shards. The command joins the
shards of its prompts, in prompt order, into ``--out``; the folder is kept, so a later
run with more ``--prompts`` captures only the new ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.learn.run_settings import record_run_settings

if TYPE_CHECKING:
    from edgespec.learn.wisv.capture import PromptCapture
    from edgespec.learn.wisv.dataset import WisvDataset


def parts_folder(out: Path) -> Path:
    """The shard folder of the dataset file ``out``."""
    return out.with_name(out.stem + ".parts")


@dataclass(frozen=True, slots=True)
class ShardStore:
    """The shards of one capture run (module docstring)."""

    folder: Path

    def open(self, settings: dict[str, Any]) -> None:
        """Create the folder, or check that it was written with the same ``settings``."""
        record_run_settings(self.folder, settings, "a capture", repr(str(self.folder)))

    def path(self, prompt_index: int) -> Path:
        return self.folder / f"prompt-{prompt_index:07d}.npz"

    def done(self, prompt_index: int) -> bool:
        return self.path(prompt_index).is_file()

    def save(self, capture: PromptCapture, target_vocab_size: int) -> None:
        """One prompt's rows, its capture seconds, continuation tokens and the target's
        vocabulary size (in the meta)."""
        from edgespec.learn.wisv.dataset import WisvDataset

        meta = {
            "seconds": capture.seconds,
            "continuation_tokens": capture.continuation_tokens,
            "target_vocab_size": target_vocab_size,
        }
        # save is atomic: a file there is a whole prompt's
        WisvDataset.from_captures([capture], meta).save(self.path(capture.prompt_index))

    def load(self, prompt_index: int) -> WisvDataset:
        from edgespec.learn.wisv.dataset import WisvDataset

        return WisvDataset.load(self.path(prompt_index))


def target_vocab_size(metas: Sequence[dict[str, Any]]) -> int | None:
    """The target's vocabulary size every shard's or capture's meta records (``None`` when
    one records none, as those saved before it was recorded, or they differ)."""
    sizes = {meta.get("target_vocab_size") for meta in metas}
    size = sizes.pop() if len(sizes) == 1 else None
    valid = isinstance(size, int) and not isinstance(size, bool) and size > 0
    return size if valid else None
