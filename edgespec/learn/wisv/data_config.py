"""What ``edgespec train wisv-data`` captures: its validated flags (:class:`DataConfig`, and
the settings that decide a prompt's rows, the store's ``run.json``) and the train prompts
it runs (:func:`data_prompts`). The capture itself is :mod:`edgespec.learn.wisv.collect`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.learn.run_settings import file_digest

DATASETS: tuple[str, ...] = ("gsm8k", "cnndm", "sharegpt")
"""``wisv-data --dataset`` choices: GSM8K by answer, the other two by similarity."""
DATASET_NAMES = {"gsm8k": "GSM8K", "cnndm": "CNN/DailyMail", "sharegpt": "ShareGPT"}
ROLLOUT_CHANNELS: tuple[str, ...] = ("draw", "poor", "good")
"""``wisv-data --rollout-channel`` choices (:mod:`edgespec.learn.wisv.rollout`, *The
head's channel*)."""
GSM8K_FRAME_NOTE = "edgespec.learn.wisv.answers.GSM8K_FRAME (2 worked examples, #### N)"
NO_FRAME_NOTE = "none (the dataset's template only)"


@dataclass(frozen=True, slots=True)
class DataConfig:
    """What ``wisv-data`` captures (its flags, validated once)."""

    out: Path
    summary: Path
    target: str
    draft: str
    dataset: str = "gsm8k"
    prompts: int = 40
    start: int = 0
    gamma: int = 8
    max_new_tokens: int = 128
    max_prompt_tokens: int = 512
    threads: int = 1
    verbose: bool = False
    command: str = ""
    frame: bool = True
    """GSM8K only: the two worked examples in front (``--no-frame``: the template only)."""
    rollout_head: Path | None = None
    """Capture WISV's rollout with this head (:mod:`edgespec.learn.wisv.rollout`)."""
    rollout_threshold: float = 12.0
    rollout_channel: str = "draw"
    seed: int = 0
    """The rollout's per-prompt channel draws."""

    def __post_init__(self) -> None:
        if self.start < 0:
            raise UserInputError(f"--start must be >= 0, got {self.start}")
        if self.out.suffix != ".npz":
            raise UserInputError(f"--out {self.out}: the dataset is an .npz file")
        if self.summary.resolve() == self.out.resolve():
            raise UserInputError(f"--summary {self.summary} is --out's file: the summary would "
                                 "replace the dataset; give another --summary")  # fmt: skip
        if self.max_prompt_tokens < 2:
            raise UserInputError("--max-prompt-tokens must be >= 2")
        if self.dataset not in DATASETS:
            raise UserInputError(
                f"unknown dataset {self.dataset!r}: known are {', '.join(DATASETS)}"
            )
        if self.rollout_head is not None:  # read now, not after the models load
            from edgespec.learn.wisv.fit import read_head

            read_head("--rollout-head", self.rollout_head)
        if not 0.0 <= self.rollout_threshold <= 16.0:
            raise UserInputError(f"--threshold must be in [0, 16], got {self.rollout_threshold}")
        if self.rollout_channel not in ROLLOUT_CHANNELS:
            raise UserInputError(
                f"--rollout-channel {self.rollout_channel!r}: known are "
                f"{', '.join(ROLLOUT_CHANNELS)}"
            )

    @property
    def framed(self) -> bool:
        """Whether the prompts carry the GSM8K frame."""
        return self.frame and self.dataset == "gsm8k"

    def run_settings(self) -> dict[str, Any]:
        """What decides a prompt's rows (the store's ``run.json``)."""
        head = self.rollout_head
        rollout = None
        if head is not None:
            rollout = {
                "head_sha256": file_digest(head),
                "threshold": self.rollout_threshold,
                "channel": self.rollout_channel,
                "seed": self.seed,
            }
        return {
            "target": self.target,
            "draft": self.draft,
            "dataset": self.dataset,
            "frame": self.framed,
            "gamma": self.gamma,
            "max_new_tokens": self.max_new_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
            "rollout": rollout,
        }


@dataclass(frozen=True, slots=True)
class DataPrompt:
    """A ``wisv-data`` prompt: its index (the train file's line number; for ShareGPT, its
    place among the train prompts), its id and the text to encode (framed for GSM8K)."""

    index: int
    prompt_id: str
    text: str


def data_prompts(dataset: str, start: int, count: int, frame: bool = True) -> list[DataPrompt]:
    """The ``count`` train prompts of ``dataset`` from ``start`` (:class:`DataPrompt`;
    GSM8K's framed unless ``frame`` is false); :class:`UserInputError` when they cannot
    be read or are too few."""
    from edgespec.datasets.prompts import load_prompts
    from edgespec.learn.wisv.answers import framed_prompt

    if dataset not in DATASETS:
        raise UserInputError(f"unknown dataset {dataset!r}: known are {', '.join(DATASETS)}")
    name = DATASET_NAMES[dataset]
    try:
        prompts = load_prompts(dataset, "train", start + count)[start:]
    except (OSError, ValueError, ImportError) as exc:
        raise UserInputError(f"{name} train prompts: {exc}") from exc
    if len(prompts) < count:
        raise UserInputError(
            f"--start {start} --prompts {count}: only {len(prompts)} {name} train "
            "prompts from there"
        )
    found = []
    for offset, prompt in enumerate(prompts):
        # a ShareGPT id is a conversation id: number those prompts by place instead
        by_place = dataset == "sharegpt"
        index = start + offset if by_place else int(prompt.prompt_id.rsplit("-", 1)[1])
        text = framed_prompt(prompt.text) if dataset == "gsm8k" and frame else prompt.text
        found.append(DataPrompt(index, prompt.prompt_id, text))
    return found
