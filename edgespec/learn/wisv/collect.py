"""``edgespec train wisv-data``'s library: the capture over the train prompts with the real
pair (:func:`capture_dataset`), and the dataset and JSON summary it writes.

The command (:mod:`edgespec.learn.wisv.command`) parses into a
:class:`~edgespec.learn.wisv.data_config.DataConfig`; this module loads the pair (a draft of
another vocabulary is refused before any prompt, and before the store records the run),
captures every prompt not captured yet (the lossless
:func:`edgespec.learn.wisv.capture.capture_prompt`, or with ``rollout_head``
:func:`edgespec.learn.wisv.rollout.capture_rollout`) into the resumable store
(:mod:`edgespec.learn.wisv.shards`) and joins the prompts' shards into the ``.npz`` and
its summary.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from edgespec.errors import UserInputError
from edgespec.learn.progress import progress_bar
from edgespec.learn.wisv.data_config import (
    GSM8K_FRAME_NOTE,
    NO_FRAME_NOTE,
    DataConfig,
    DataPrompt,
    data_prompts,
)
from edgespec.learn.wisv.shards import ShardStore, parts_folder, target_vocab_size
from edgespec.output_paths import write_text_atomically

if TYPE_CHECKING:
    from edgespec.learn.wisv.capture import PromptCapture


def prompt_note(answer: str | None, similarity: tuple[float, ...] | None) -> str:
    """One capture's label note for the log: its answer, or its mean ROUGE-L F1."""
    if similarity is None:
        return f"answer {answer!r}"
    if not similarity:
        return "no ROUGE-L F1"
    return f"mean ROUGE-L F1 {sum(similarity) / len(similarity):.3f}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _capturer(config: DataConfig) -> tuple[Callable[[DataPrompt], PromptCapture], int]:
    """Load the pair; a function that captures one prompt (lossless, or the rollout with
    ``config.rollout_head``), and the target's vocabulary size."""
    import torch
    from rich.console import Console

    from edgespec.learn.drafts.distill_data import encode_prompt
    from edgespec.learn.wisv.capture import CaptureSettings, Criterion, TextOutcome, capture_prompt
    from edgespec.learn.wisv.fit import read_head
    from edgespec.learn.wisv.rollout import HeadRule, capture_rollout, rollout_channel
    from edgespec.learn.wisv.similarity import ContinuationSimilarity
    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.attention_mask import attention_layout
    from edgespec.runtime.backends.transformers_backend import eos_ids
    from edgespec.runtime.edge.draft_backends import check_pair_vocab

    torch.set_num_threads(config.threads)
    with Console(stderr=True, markup=False).status(
        f"loading target {config.target} and draft {config.draft}"
    ):
        target = load_model(config.target, require_tokenizer=True, verbose=config.verbose)
        draft = load_model(config.draft, target=target, verbose=config.verbose)
    vocab_size = int(target.model.config.get_text_config().vocab_size)
    check_pair_vocab(config.draft, draft.model, vocab_size)  # it crashed mid-prompt
    layout = attention_layout(target.model)
    settings = CaptureSettings(config.gamma, config.max_new_tokens)
    gsm8k = config.dataset == "gsm8k"
    outcome: Criterion = TextOutcome(target.tokenizer) if gsm8k else ContinuationSimilarity()
    eos = eos_ids(target.model)
    head = None if config.rollout_head is None else read_head("--rollout-head", config.rollout_head)
    if head is not None:  # before the store records the run (it crashed at the first prompt)
        _check_head_widths(config, head, (draft.model, target.model))

    def capture(prompt: DataPrompt) -> PromptCapture:
        ids = encode_prompt(target.tokenizer, prompt.text, config.max_prompt_tokens)
        pair = (target.model, draft.model, layout, ids, prompt.index, settings, outcome)
        if head is None:
            return capture_prompt(*pair, eos)
        channel = rollout_channel(config.rollout_channel, config.seed, prompt.index)
        return capture_rollout(*pair, HeadRule(head, channel, config.rollout_threshold), eos)

    return capture, vocab_size


def _check_head_widths(config: DataConfig, head: Any, models: tuple[Any, Any]) -> None:
    """``--rollout-head`` was trained for this target (when it records one, as ``serve
    --semantic-head`` checks) and takes the pair's hidden widths (draft, target) and the
    runtime's CSI features, else a :class:`UserInputError` naming what differs."""
    from edgespec.models.registry import same_model
    from edgespec.policies.semantic.csi import csi_count_problem

    trained = getattr(head, "trained_for", None)  # a head of the registry may record none
    if trained is not None and not same_model(trained.target, config.target):
        raise UserInputError(
            f"--rollout-head {config.rollout_head} was trained for target {trained.target}, "
            f"not {config.target}: give a head trained for this pair"
        )

    draft, target = (int(m.config.get_text_config().hidden_size) for m in models)
    if (head.draft_hidden, head.target_hidden) != (draft, target):
        raise UserInputError(
            f"--rollout-head {config.rollout_head}: the head takes hidden states of widths "
            f"{head.draft_hidden} (draft) and {head.target_hidden} (target); the pair's are "
            f"{draft} and {target}: give a head trained for this pair"
        )
    if problem := csi_count_problem(head.num_csi):
        raise UserInputError(f"--rollout-head {config.rollout_head}: {problem}")


def _capture_all(config: DataConfig, prompts: Sequence[DataPrompt], store: ShardStore) -> int:
    """Capture every prompt without a shard into ``store``, with a progress bar (a line
    per prompt when stderr is no terminal); the number captured now."""
    from rich.console import Console

    from edgespec.models.library_output import library_output

    todo = [p for p in prompts if not store.done(p.index)]
    console = Console(stderr=True, markup=False)
    if len(todo) < len(prompts):
        console.print(f"{store.folder}: {len(prompts) - len(todo)} prompts captured before")
    if not todo:
        return 0
    capture, vocab_size = _capturer(config)
    store.open(config.run_settings())  # recorded once the pair is accepted
    mismatches = critical = 0
    bar = progress_bar(console, "prompts", len(prompts), remaining=True)
    with bar as update, library_output(config.verbose):
        update(completed=len(prompts) - len(todo))
        for prompt in todo:
            found = capture(prompt)
            store.save(found, vocab_size)
            mismatches += len(found.mismatches)
            critical += sum(found.critical)
            update(advance=1, description=f"prompts ({mismatches} mismatches, {critical} critical)")
            if not console.is_terminal:
                console.print(
                    f"{prompt.prompt_id}: {len(found.output)} tokens, {len(found.mismatches)} "
                    f"mismatches, {sum(found.critical)} critical, "
                    f"{prompt_note(found.answer, found.similarity)}, "
                    f"{sum(found.seconds.values()):.1f} s"
                )
    return len(todo)


def _meta(config: DataConfig, prompts: Sequence[DataPrompt]) -> dict[str, Any]:
    from edgespec.learn.wisv.similarity import ContinuationSimilarity

    gsm8k = config.dataset == "gsm8k"
    rollout = config.run_settings()["rollout"]
    if rollout is not None:
        rollout = {"head": str(config.rollout_head), **rollout}
    return {
        "command": config.command,
        "finished": _now(),
        "target": config.target,
        "draft": config.draft,
        "dataset": config.dataset,
        "split": "train",
        "start": config.start,
        "frame": GSM8K_FRAME_NOTE if config.framed else NO_FRAME_NOTE,
        **({} if gsm8k else {"criterion": ContinuationSimilarity().describe()}),
        **({"prompt_ids": [p.prompt_id for p in prompts]} if config.dataset == "sharegpt" else {}),
        **({} if rollout is None else {"rollout": rollout}),
        "gamma": config.gamma,
        "max_new_tokens": config.max_new_tokens,
        "threads": config.threads,
    }


def capture_dataset(config: DataConfig) -> dict[str, Any]:
    """Capture ``config``'s prompts not captured yet, join all their shards into the
    dataset and write it and its summary; the summary."""
    from edgespec.learn.wisv.dataset import WisvDataset

    prompts = data_prompts(config.dataset, config.start, config.prompts, config.frame)
    store = ShardStore(parts_folder(config.out))
    if store.folder.is_dir():  # an earlier run's settings: checked before the models load
        store.open(config.run_settings())
    start = time.perf_counter()
    captured = _capture_all(config, prompts, store)
    wall_s = time.perf_counter() - start
    shards = [store.load(p.index) for p in prompts]
    vocab_size = target_vocab_size([s.meta for s in shards])
    meta = {**_meta(config, prompts), "target_vocab_size": vocab_size}
    data = WisvDataset.concat(shards, meta)
    data.save(config.out)
    seconds: dict[str, float] = {}
    for shard in shards:
        for key, value in shard.meta["seconds"].items():
            seconds[key] = seconds.get(key, 0.0) + value
    summary = {
        **meta,
        **data.summary(),
        "continuation_tokens": sum(s.meta["continuation_tokens"] for s in shards),
        "captured_now": captured,
        "wall_s": round(wall_s, 1),
        "capture_s": round(sum(seconds.values()), 1),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }
    config.summary.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(config.summary, json.dumps(summary, indent=1) + "\n")
    return summary
