"""``edgespec train wisv-data``'s library: the train prompts, the capture over them with
the real pair (:func:`capture_dataset`), and the dataset and JSON summary it writes.

The command (:mod:`edgespec.learn.wisv.command`) parses into a :class:`DataConfig`; this
module loads the pair, captures every prompt (:func:`edgespec.learn.wisv.capture.
capture_prompt`) and writes the ``.npz`` and its summary.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.learn.progress import progress_bar
from edgespec.learn.wisv.capture import PromptCapture

DATASETS: tuple[str, ...] = ("gsm8k", "cnndm", "sharegpt")
"""``wisv-data --dataset`` choices: GSM8K by answer, the other two by similarity."""
DATASET_NAMES = {"gsm8k": "GSM8K", "cnndm": "CNN/DailyMail", "sharegpt": "ShareGPT"}
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

    def __post_init__(self) -> None:
        if self.start < 0:
            raise UserInputError(f"--start must be >= 0, got {self.start}")
        if self.out.suffix != ".npz":
            raise UserInputError(f"--out {self.out}: the dataset is an .npz file")
        if self.max_prompt_tokens < 2:
            raise UserInputError("--max-prompt-tokens must be >= 2")
        if self.dataset not in DATASETS:
            raise UserInputError(
                f"unknown dataset {self.dataset!r}: known are {', '.join(DATASETS)}"
            )


@dataclass(frozen=True, slots=True)
class DataPrompt:
    """A ``wisv-data`` prompt: its index (the train file's line number; for ShareGPT, its
    place among the train prompts), its id and the text to encode (framed for GSM8K)."""

    index: int
    prompt_id: str
    text: str


def data_prompts(dataset: str, start: int, count: int) -> list[DataPrompt]:
    """The ``count`` train prompts of ``dataset`` from ``start`` (:class:`DataPrompt`);
    :class:`UserInputError` when they cannot be read or are too few."""
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
        text = framed_prompt(prompt.text) if dataset == "gsm8k" else prompt.text
        found.append(DataPrompt(index, prompt.prompt_id, text))
    return found


def prompt_note(answer: str | None, similarity: tuple[float, ...] | None) -> str:
    """One capture's label note for the log: its answer, or its mean ROUGE-L F1."""
    if similarity is None:
        return f"answer {answer!r}"
    if not similarity:
        return "no ROUGE-L F1"
    return f"mean ROUGE-L F1 {sum(similarity) / len(similarity):.3f}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _capture_all(config: DataConfig, prompts: Sequence[DataPrompt]) -> list[PromptCapture]:
    """Load the pair and capture every prompt, with a progress bar (a line per prompt
    when stderr is no terminal)."""
    import torch
    from rich.console import Console

    from edgespec.learn.drafts.distill_data import encode_prompt
    from edgespec.learn.wisv.capture import CaptureSettings, Criterion, TextOutcome, capture_prompt
    from edgespec.learn.wisv.similarity import ContinuationSimilarity
    from edgespec.models.loading import library_output, load_model
    from edgespec.runtime.backends.attention_mask import attention_layout
    from edgespec.runtime.backends.transformers_backend import eos_ids

    torch.set_num_threads(config.threads)
    console = Console(stderr=True)
    with console.status(f"loading target {config.target} and draft {config.draft}"):
        target = load_model(config.target, require_tokenizer=True, verbose=config.verbose)
        draft = load_model(config.draft, target=target, verbose=config.verbose)
    layout = attention_layout(target.model)
    settings = CaptureSettings(config.gamma, config.max_new_tokens)
    gsm8k = config.dataset == "gsm8k"
    outcome: Criterion = TextOutcome(target.tokenizer) if gsm8k else ContinuationSimilarity()
    eos = eos_ids(target.model)
    captures: list[PromptCapture] = []
    bar = progress_bar(console, "prompts", len(prompts), remaining=True)
    with bar as update, library_output(config.verbose):
        for prompt in prompts:
            ids = encode_prompt(target.tokenizer, prompt.text, config.max_prompt_tokens)
            found = capture_prompt(
                target.model, draft.model, layout, ids, prompt.index, settings, outcome, eos
            )
            captures.append(found)
            mismatches = sum(len(c.mismatches) for c in captures)
            critical = sum(sum(c.critical) for c in captures)
            update(advance=1, description=f"prompts ({mismatches} mismatches, {critical} critical)")
            if not console.is_terminal:
                console.print(
                    f"{prompt.prompt_id}: {len(found.output)} tokens, {len(found.mismatches)} "
                    f"mismatches, {sum(found.critical)} critical, "
                    f"{prompt_note(found.answer, found.similarity)}"
                )
    return captures


def _meta(config: DataConfig, prompts: Sequence[DataPrompt]) -> dict[str, Any]:
    from edgespec.learn.wisv.similarity import ContinuationSimilarity

    gsm8k = config.dataset == "gsm8k"
    return {
        "command": config.command,
        "finished": _now(),
        "target": config.target,
        "draft": config.draft,
        "dataset": config.dataset,
        "split": "train",
        "start": config.start,
        "frame": GSM8K_FRAME_NOTE if gsm8k else NO_FRAME_NOTE,
        **({} if gsm8k else {"criterion": ContinuationSimilarity().describe()}),
        **({"prompt_ids": [p.prompt_id for p in prompts]} if config.dataset == "sharegpt" else {}),
        "gamma": config.gamma,
        "max_new_tokens": config.max_new_tokens,
        "threads": config.threads,
    }


def capture_dataset(config: DataConfig) -> dict[str, Any]:
    """Capture ``config``'s prompts, write the dataset and its summary; the summary."""
    from edgespec.learn.wisv.dataset import WisvDataset

    prompts = data_prompts(config.dataset, config.start, config.prompts)
    start = time.perf_counter()
    captures = _capture_all(config, prompts)
    wall_s = time.perf_counter() - start
    meta = _meta(config, prompts)
    data = WisvDataset.from_captures(captures, meta)
    data.save(config.out)
    seconds = {"reference": 0.0, "draft": 0.0, "continuations": 0.0}
    for found in captures:
        for key, value in found.seconds.items():
            seconds[key] += value
    summary = {
        **meta,
        **data.summary(),
        "continuation_tokens": sum(c.continuation_tokens for c in captures),
        "wall_s": round(wall_s, 1),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }
    config.summary.parent.mkdir(parents=True, exist_ok=True)
    config.summary.write_text(json.dumps(summary, indent=1) + "\n")
    return summary
