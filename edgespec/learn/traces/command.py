"""`edgespec trace`: capture acceptance traces from a real draft/target pair.

Example (the bundled pair on 10 GSM8K test prompts, with both speed baselines)::

    edgespec trace --target gemma3-270m --draft gemma3-270m-draft --dataset gsm8k \\
        --limit 10 --baselines --out traces/gsm8k.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
from contextlib import nullcontext
from typing import Any

from edgespec.arguments import (
    add_device_arguments,
    add_real_pair,
    add_seed,
    add_threads,
    add_verbose,
)
from edgespec.datasets.prompts import DATASETS, HELD_OUT
from edgespec.errors import UserInputError, check_fits_context
from edgespec.learn.progress import progress_bar
from edgespec.learn.traces.checks import (
    NGRAM,
    check_args,
    check_outputs,
    given_cuts,
    prompt_sets,
    sampled_title,
    slo_classes,
)
from edgespec.learn.traces.pair import load_pair, model_specs
from edgespec.models.devices import device_placement
from edgespec.models.registry import recorded_name
from edgespec.output_paths import output_file, writable_output_folder
from edgespec.runtime.commands.sampling_arguments import add_cut_arguments
from edgespec.runtime.commands.stop_arguments import add_stop_arguments
from edgespec.runtime.edge.draft_backends import check_pair_vocab


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_real_pair(
        parser, draft_help=f"draft model name or local path, or {NGRAM!r} for prompt lookup"
    )
    parser.add_argument(
        "--lookup",
        action="store_true",
        help="combine the neural draft with prompt lookup (n-gram match first, model otherwise)",
    )
    parser.add_argument(
        "--tree",
        metavar="B1,B2,...",
        help="draft a token tree: the draft's top-B_d tokens at depth d (e.g. 2,2,1,1; "
        "with --lookup plus the lookup chain), verified greedily in one target pass",
    )
    parser.add_argument(
        "--tree-min-prob",
        type=float,
        help="with --tree: leave out candidates whose path probability under the draft is "
        "below this (default 0: keep all; the draft's first choice at the root always stays)",
    )
    parser.add_argument(
        "--tree-max-nodes",
        type=int,
        help="with --tree: the most tokens one tree may hold, at most 64 (default 24)",
    )
    parser.add_argument(
        "--dataset",
        action="append",
        help=f"one of {', '.join(DATASETS + HELD_OUT)} (general: held-out prompts no draft was "
        "trained on) or a JSONL file with a 'prompt' field (repeatable; default gsm8k)",
    )
    parser.add_argument(
        "--split",
        default="test",
        choices=("train", "test"),
        help="split of a bundled --dataset (default test)",
    )
    parser.add_argument("--limit", type=int, default=10, help="prompts per dataset (default 10)")
    parser.add_argument("--gamma", type=int, default=4, help="window γ_max, tokens (default 4)")
    parser.add_argument(
        "--window",
        choices=("static", "dynamic"),
        default="static",
        help="static (default): γ every round; dynamic: DSD's threshold rule starting at γ (up "
        "to max(γ, 8)). acceptance_seq and draft_features do not depend on it",
    )
    add_stop_arguments(parser)
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="0 (default): greedy; > 0: sample at this temperature (prompt i with seed --seed + "
        "i), acceptance_seq holding what the rounds drew and acceptance_prob each position's "
        "acceptance probability (a --tree: its rounds only)",
    )
    add_cut_arguments(parser)
    parser.add_argument(
        "--max-new-tokens", type=int, default=64, help="tokens generated per prompt (default 64)"
    )
    parser.add_argument(
        "--max-prompt-tokens",
        type=int,
        default=256,
        help="keep BOS + the prompt's last tokens up to this many (default 256)",
    )
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="also time the target alone and assisted generation (transformers' generate, "
        "its kernels) per prompt; check the output against the target alone, exact kernels",
    )
    parser.add_argument(
        "--slo-classes",
        default="default",
        help="SLO class names, comma-separated, assigned round-robin (default: default)",
    )
    parser.add_argument(
        "--num-drafters",
        type=int,
        default=8,
        help="drafter_id = request index mod this (default 8)",
    )
    parser.add_argument(
        "--rate", type=float, default=1.0, help="Poisson arrival rate, requests/s (default 1)"
    )
    add_device_arguments(parser, "the target and draft")
    add_threads(parser, 2)
    add_seed(parser, "the arrival times and, with --temperature, the sampling")
    parser.add_argument(
        "--out",
        type=output_file,
        help="write all records to this JSONL file (give --out and/or --out-dir)",
    )
    parser.add_argument(
        "--out-dir", type=writable_output_folder, help="write <dataset>.jsonl files here"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an --out file, or --out-dir's <dataset>.jsonl, holding an earlier trace "
        "(default: refused)",
    )
    add_verbose(parser)
    parser.add_argument(
        "--json",
        type=output_file,
        help="also write the summary table (per dataset and all) as JSON to this file",
    )


def run(args: argparse.Namespace) -> int:
    import torch
    from rich.console import Console

    from edgespec.learn.traces.drafters import DraftChoice, drafter_for
    from edgespec.learn.traces.settings import PairInfo
    from edgespec.learn.traces.summary import print_summary_table, write_summary_json
    from edgespec.runtime.commands.stop_arguments import stop_policy_from_args

    console = Console(stderr=True, markup=False)
    if not console.is_terminal:
        console = Console(stderr=True, markup=False, width=180)
    problem = check_args(args)
    if problem is not None:
        console.print(f"edgespec trace: {problem}")
        return 2
    stop = stop_policy_from_args(args)  # a bad file fails before any model loads
    placement = device_placement(args)  # so does a GPU this machine lacks
    torch.set_num_threads(args.threads)
    sets = prompt_sets(args)  # a bad --dataset fails before any model loads
    check_outputs(args, [name for name, _ in sets])  # so does an earlier trace
    target_spec, draft_spec = model_specs(args.target, args.draft)  # so does a bad model
    with console.status(f"loading target {args.target} and draft {args.draft}"):
        target, draft_model = load_pair(target_spec, draft_spec, placement, args.verbose)
    from edgespec.runtime.backends.mask_check_cache import checked_target

    target_backend = checked_target(target.model, target.weight_files)
    check_pair_vocab(args.draft, draft_model, target_backend.vocab_size)  # before any work
    try:  # the records name the models as profiles do, to be found again from any folder
        choice = DraftChoice(recorded_name(args.draft), args.lookup, args.tree)
        if args.tree_min_prob is not None:
            choice = dataclasses.replace(choice, tree_min_prob=args.tree_min_prob)
        if args.tree_max_nodes is not None:
            choice = dataclasses.replace(choice, tree_max_nodes=args.tree_max_nodes)
        sampled_vocab = target_backend.vocab_size if args.temperature > 0 else None
        drafter, draft_model, draft_name = drafter_for(
            choice, draft_model, stop is not None, sampled_vocab
        )
    except UserInputError as exc:
        console.print(f"edgespec trace: {exc}")
        return 2
    pair = PairInfo(recorded_name(args.target), draft_name, target.model, draft_model)
    records = _capture(args, (target, target_backend), drafter, pair, sets, stop, console)
    _write_records(args, records, [name for name, _ in sets], console)
    how = sampled_title(args) if args.temperature > 0 else "greedy"
    title = f"speculative decoding, {how}, γ = {args.gamma}, {args.window} window"
    if stop is not None:
        title += f", stop predictor {args.stop_predictor} (P >= {stop.threshold:g})"
    print_summary_table(console, records, args.gamma, args.max_new_tokens, title)
    if args.json is not None:
        write_summary_json(args.json, records, args.gamma, args.max_new_tokens, title)
        console.print(f"wrote the summary to {args.json}")
    return 0


def _capture(
    args: argparse.Namespace,
    target_and_backend: tuple[Any, Any],
    drafter: Any,
    pair: Any,
    prompt_sets: list[tuple[str, list[Any]]],
    stop: Any,
    console: Any,
) -> list[Any]:
    """Every prompt traced, under a progress bar on a terminal; in a log file, one line
    per request instead."""
    from edgespec.learn.drafts.distill_data import encode_prompt
    from edgespec.learn.traces.capture import capture
    from edgespec.learn.traces.records import TraceRecord
    from edgespec.models.library_output import library_output

    target, target_backend = target_and_backend
    work = [
        (p.prompt_id, name, encode_prompt(target.tokenizer, p.text, args.max_prompt_tokens))
        for name, prompts in prompt_sets
        for p in prompts
    ]
    _check_context(work, args.max_new_tokens, target_backend.max_context_tokens)
    logged = not console.is_terminal  # a log file gets one line per request, and no bar
    bar = nullcontext(_no_bar) if logged else progress_bar(console, "tracing", total=len(work))
    done = iter(range(1, len(work) + 1))
    with bar as update, library_output(args.verbose):

        def on_record(record: TraceRecord) -> None:
            update(advance=1, description=f"tracing {record.dataset}")
            if logged:
                accepted = sum(r.num_accepted for r in record.rounds)
                console.print(
                    f"{record.request_id} ({next(done)}/{len(work)}): {record.output_tokens} "
                    f"tokens, {len(record.rounds)} rounds, {accepted} drafts accepted, "
                    f"lossless={record.lossless}"
                )

        def on_stage(request_id: str, stage: str) -> None:
            update(description=f"tracing {request_id}: {stage}")

        settings = _capture_settings(args, pair.draft_model is not None, stop)
        return capture(target_backend, drafter, pair, work, settings, on_record, on_stage)


def _no_bar(**changes: Any) -> None:
    """A log file's progress "bar": its requests' lines say it (:func:`_capture`)."""


def _check_context(work: list[Any], max_new_tokens: int, context: int) -> None:
    """Every prompt with ``--max-new-tokens`` within the target's context, before any is
    traced: a :class:`UserInputError` naming the longest prompt otherwise."""
    request_id, _, prompt_ids = max(work, key=lambda item: len(item[2]))
    check_fits_context(f"prompt {request_id}", len(prompt_ids), "--max-new-tokens", max_new_tokens,
                       context, " (lower --max-new-tokens or --max-prompt-tokens)")  # fmt: skip


def _capture_settings(args: argparse.Namespace, has_draft_model: bool, stop: Any) -> Any:
    from edgespec.learn.traces.settings import CaptureSettings

    return CaptureSettings(
        gamma_max=args.gamma,
        max_new_tokens=args.max_new_tokens,
        target_only=args.baselines,
        assisted=args.baselines and has_draft_model,
        slo_classes=slo_classes(args.slo_classes),
        num_drafters=args.num_drafters,
        arrival_rate_per_s=args.rate,
        seed=args.seed,
        draft_tree=args.tree,
        window=args.window,
        stop=stop,
        temperature=args.temperature,
        **given_cuts(args),
    )


def _write_records(
    args: argparse.Namespace, records: list[Any], datasets: list[str], console: Any
) -> None:
    """``--out``: every record in one file; ``--out-dir``: one file per dataset."""
    from edgespec.learn.traces.records import write_trace

    if args.out is not None:
        write_trace(args.out, records)
        console.print(f"wrote {len(records)} records to {args.out}")
    if args.out_dir is not None:
        for name in datasets:
            subset = [r for r in records if r.dataset == name]
            write_trace(args.out_dir / f"{name}.jsonl", subset)
            console.print(f"wrote {len(subset)} records to {args.out_dir / (name + '.jsonl')}")
