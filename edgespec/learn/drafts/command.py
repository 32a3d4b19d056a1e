"""`edgespec train draft`: distil a trimmed-vocabulary draft from a target.

Two stages, both resumable: (1) the target's greedy continuations of the training prompts
are generated in batches into ``--data-dir`` shards (skipped shards already there);
(2) a small draft is trained on them and saved (fp16 safetensors) to ``--out``.
The bundled ``gemma3-270m-draft`` was made with the command in docs/LEARN.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgespec.arguments import add_threads, add_verbose
from edgespec.datasets.prompts import DATASETS
from edgespec.errors import UserInputError

# Plain numeric options of `train draft`: flag, type, default, help (the default is appended).
_NUMBERS: tuple[tuple[str, Callable[[str], float], float, str], ...] = (
    ("--sharegpt-limit", int, 600, "ShareGPT training prompts"),
    ("--gen-minutes", float, 35.0, "generation budget, minutes"),
    ("--train-minutes", float, 20.0, "training budget, minutes"),
    ("--batch-size", int, 32, "prompts generated together"),
    ("--max-prompt-tokens", int, 256, "prompt tokens kept: BOS + the last ones"),
    ("--max-new-tokens", int, 96, "tokens generated per prompt"),
    ("--kept-tokens", int, 8192, "draft vocabulary size K (a new draft)"),
    ("--hidden-size", int, 256, "draft hidden size (a new draft)"),
    ("--layers", int, 3, "draft Llama blocks (a new draft)"),
    ("--heads", int, 4, "draft attention heads (a new draft)"),
    ("--intermediate-size", int, 768, "draft MLP width (a new draft)"),
    ("--epochs", int, 4, "passes over the training data"),
    ("--lr", float, 2e-3, "AdamW peak learning rate (warm-up, cosine decay)"),
    ("--tokens-per-step", int, 8192, "tokens per optimizer step"),
    ("--seed", int, 0, "seed of batching, sampling, the draft's init and the validation split"),
)


def add_arguments(sub: Any) -> None:
    """Add ``draft`` to ``edgespec train``'s subcommands (an argparse subparsers action)."""
    p = sub.add_parser("draft", help="distil a small trimmed-vocabulary draft model")
    p.add_argument("--target", default="gemma3-270m", help="target model (default gemma3-270m)")
    p.add_argument("--out", type=Path, required=True, help="directory to save the draft in")
    p.add_argument("--data-dir", type=Path, required=True, help="distillation shards (resumable)")
    p.add_argument(
        "--datasets",
        default=",".join(DATASETS),
        help=f"comma-separated prompt sets, train split (default {','.join(DATASETS)})",
    )
    for flag, kind, default, text in _NUMBERS:
        p.add_argument(flag, type=kind, default=default, help=f"{text} (default {default:g})")
    p.add_argument(
        "--sample-temperature",
        type=float,
        default=0.0,
        help="sample continuations at this temperature (needs --fast-head; default 0 = greedy)",
    )
    p.add_argument(
        "--train-data-dir",
        type=Path,
        action="append",
        default=[],
        help="more shard directories to train on (repeatable)",
    )
    add_threads(p, 1)
    add_verbose(p)
    p.add_argument("--skip-generate", action="store_true", help="train on the shards as they are")
    p.add_argument(
        "--init-from", type=Path, help="continue training this saved draft (keeps its size, K)"
    )
    p.add_argument(
        "--fast-head",
        action="store_true",
        help="generate with the target's head cut to the --init-from draft's tokens (~2x faster)",
    )
    p.add_argument(
        "--text-data-dir",
        type=Path,
        help="also label training texts (teacher forcing) into this directory",
    )
    p.add_argument(
        "--conversations",
        type=int,
        default=2000,
        help="ShareGPT conversations to label (default 2000)",
    )
    p.add_argument(
        "--text-minutes", type=float, default=15.0, help="labelling budget, minutes (default 15)"
    )
    p.add_argument(
        "--text-max-tokens", type=int, default=256, help="tokens per labelled text (default 256)"
    )


def run(args: argparse.Namespace) -> int:
    import random
    import time

    import torch
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from edgespec.datasets.prompts import load_prompts
    from edgespec.learn.drafts import distill
    from edgespec.learn.drafts.distill_data import GenerationSettings, generate_distillation_data
    from edgespec.models.loading import library_output, load_model

    if args.fast_head and args.init_from is None:
        raise UserInputError("--fast-head needs --init-from (its kept tokens form the head)")
    if args.sample_temperature < 0:
        raise UserInputError(f"--sample-temperature must be >= 0, got {args.sample_temperature}")
    if args.sample_temperature > 0 and not args.fast_head:
        raise UserInputError("--sample-temperature needs --fast-head (it samples the cut head)")
    for extra in args.train_data_dir:
        if not extra.is_dir():
            raise UserInputError(f"--train-data-dir {str(extra)!r} is not a directory")
    if args.init_from is not None and not args.init_from.is_dir():
        raise UserInputError(f"--init-from {str(args.init_from)!r} is not a saved draft directory")
    console = Console(stderr=True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    with console.status(f"loading target {args.target}"):
        target = load_model(args.target, require_tokenizer=True, verbose=args.verbose)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    saved = None
    if args.init_from is not None:
        from edgespec.models.trimmed import TrimmedVocabDraft

        with library_output(args.verbose):
            saved = TrimmedVocabDraft.load(args.init_from)
    if not args.skip_generate:
        prompts = []
        for name in (d.strip() for d in args.datasets.split(",") if d.strip()):
            limit = args.sharegpt_limit if name == "sharegpt" else None
            prompts.extend(load_prompts(name, "train", limit))
        settings = GenerationSettings(
            batch_size=args.batch_size,
            max_prompt_tokens=args.max_prompt_tokens,
            max_new_tokens=args.max_new_tokens,
            seed=args.seed,
            temperature=args.sample_temperature,
        )
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("generating", total=None)

            def on_batch(done: int, total: int, seconds: float) -> None:
                progress.update(
                    task,
                    completed=done,
                    total=total,
                    description=f"generating ({seconds:.0f} s/batch)",
                )
                if not console.is_terminal:
                    console.print(f"batch {done}/{total} generated in {seconds:.0f} s")

            deadline = time.monotonic() + args.gen_minutes * 60
            generate_distillation_data(
                target.model,
                target.tokenizer,
                prompts,
                args.data_dir,
                settings,
                on_batch,
                deadline,
                head_ids=saved.config.draft_token_ids if args.fast_head and saved else None,
            )
    samples = distill.load_shards(args.data_dir)
    order = list(range(len(samples)))
    random.Random(args.seed).shuffle(order)
    num_val = max(1, len(samples) // 20)
    val = [samples[i] for i in order[:num_val]]  # generated continuations only: on-policy
    train = [samples[i] for i in order[num_val:]]
    tok = target.tokenizer
    special = distill.special_token_ids(tok)
    kept = (
        list(saved.config.draft_token_ids)
        if saved is not None
        else distill.choose_kept_tokens(
            train, args.kept_tokens, always=sorted(set(special.values()))
        )
    )
    if args.train_data_dir:
        train.extend(distill.load_shards(*args.train_data_dir))
    if args.text_data_dir is not None:
        train.extend(_label_conversations(args, target, kept, columns, console))
    arch = distill.DraftArchitecture(
        num_kept_tokens=args.kept_tokens,
        hidden_size=args.hidden_size,
        num_layers=args.layers,
        num_heads=args.heads,
        intermediate_size=args.intermediate_size,
    )
    embeddings = target.model.get_input_embeddings().weight.detach()
    draft = saved or distill.init_draft(embeddings, kept, arch, special, args.target)
    del target
    train_settings = distill.TrainSettings(
        epochs=args.epochs,
        tokens_per_step=args.tokens_per_step,
        learning_rate=args.lr,
        seed=args.seed,
        time_budget_s=args.train_minutes * 60,
    )
    train, leaked = distill.without_prompts_of(train, val)
    console.print(
        f"{len(train)} training / {len(val)} validation sequences, K = {len(kept)} kept tokens"
        f" ({leaked} sharing a validation prompt left out)"
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("training", total=None)

        def on_step(step: int, total: int, loss: float, agreement: float) -> None:
            progress.update(
                task,
                completed=step,
                total=total,
                description=f"training loss {loss:.3f} agree {agreement:.3f}",
            )
            if not console.is_terminal and step % 20 == 0:  # a log file gets a line now and then
                console.print(f"step {step}/{total} loss {loss:.3f} agreement {agreement:.3f}")

        distill.train_draft(draft, train, train_settings, on_step)
    agreement = distill.evaluate_agreement(draft, val, train_settings)
    draft.save(args.out)
    size_mb = sum(f.stat().st_size for f in args.out.iterdir()) / 1e6
    console.print(f"validation top-1 agreement with the target: {agreement:.3f}")
    console.print(f"saved draft to {args.out} ({size_mb:.1f} MB)")
    return 0


def _label_conversations(
    args: argparse.Namespace, target: Any, kept: list[int], columns: Any, console: Any
) -> list[Any]:
    """Teacher-forced labels for the training prompts of the non-ShareGPT datasets and for
    ShareGPT conversations (resumable shards); returns their samples."""
    import time

    from rich.progress import Progress

    from edgespec.datasets.prompts import load_prompts
    from edgespec.learn.drafts import distill
    from edgespec.learn.drafts.distill_text import label_texts, sharegpt_conversations

    # The other datasets' training prompts (articles, code, questions), then conversations.
    texts = [
        p.text
        for name in (d.strip() for d in args.datasets.split(",") if d.strip())
        if name != "sharegpt"
        for p in load_prompts(name, "train")
    ]
    texts.extend(sharegpt_conversations(limit=args.conversations))
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("labelling conversations", total=None)

        def on_batch(done: int, total: int, seconds: float) -> None:
            progress.update(task, completed=done, total=total)
            if not console.is_terminal and done % 10 == 0:
                console.print(f"batch {done}/{total} labelled ({seconds:.1f} s)")

        label_texts(
            target.model,
            target.tokenizer,
            texts,
            args.text_data_dir,
            kept,
            max_tokens=args.text_max_tokens,
            progress=on_batch,
            deadline_s=time.monotonic() + args.text_minutes * 60,
        )
    return distill.load_shards(args.text_data_dir)
