"""``edgespec profile``: measure verification latency on this machine, fit WISP's
estimator and Zhu's c₁, c₂, time the drafter, and write the simulator's profile files.

Measurements go through the runtime's
:class:`~edgespec.runtime.server.engine.VerificationEngine` with the
:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget` backend, the
code ``edgespec serve`` runs. See :mod:`edgespec.profiling.measure` for the grid,
:mod:`edgespec.profiling.checks` for the refusals before anything loads,
:mod:`edgespec.profiling.run` for the files written and :mod:`edgespec.profiling.summary`
for what is printed then.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from edgespec.argument_types import repetitions, warmup_repetitions
from edgespec.arguments import add_device_arguments, add_seed, add_threads, add_verbose
from edgespec.models.devices import device_placement
from edgespec.output_paths import output_file
from edgespec.profiling.checks import (
    DRAFT_BATCHES,
    MAX_DRAFT_BATCH,
    QUICK_DRAFT_BATCHES,
    check_args,
    check_out,
    draft_batches,
    read_checkpoint,
)

NGRAM = "ngram"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        help="target model: gemma3-270m, or a local HF model dir (required unless --residuals)",
    )
    parser.add_argument(
        "--residuals",
        type=Path,
        metavar="REPORT",
        help="measure nothing: print where the Eq. 19 fit in an earlier run's NAME-report.json "
        "misses (per-category errors, and refits on the padded and the executed shapes)",
    )
    parser.add_argument("--draft", help="a draft model name/dir, or 'ngram'; omitted: no drafter")
    parser.add_argument(
        "--out",
        type=output_file,
        default="profile.yaml",
        help="target profile path, .yaml or .yml, which its siblings take (default profile.yaml)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="reduced grid (tests, CI): 1 warm-up and 2 runs per configuration",
    )
    add_device_arguments(parser, "the target and draft")
    add_threads(parser, 2)
    add_verbose(parser)
    parser.add_argument(
        "--runs",
        type=repetitions,
        help="measured runs per configuration (default 3; --quick: 2; at most 1,000)",
    )
    parser.add_argument(
        "--warmup",
        type=warmup_repetitions,
        help="discarded warm-up runs per configuration (default 10; --quick: 1; at most 1,000)",
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply the grid's token counts (cold-start totals, new tokens, memory-grid "
        "totals), in (0, 1] (e.g. 0.25 on a slow CPU; default 1 = WISP's)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time a pass by wall clock (default) or by this process's CPU time (with "
        "--threads 1: what the pass takes alone, on cores other jobs share)",
    )
    parser.add_argument(
        "--gamma", type=int, default=4, help="draft window γ for drafter timing, tokens (default 4)"
    )
    parser.add_argument(
        "--draft-batches",
        type=draft_batches,
        metavar="B,B,...",
        help="batch sizes a --draft model is also timed at, drafting for b sessions at once as "
        f"the drafting server does; its Zhu fits are over these (each in [1, {MAX_DRAFT_BATCH}]; "
        f"default {','.join(map(str, DRAFT_BATCHES))}; --quick: "
        f"{','.join(map(str, QUICK_DRAFT_BATCHES))})",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="bootstrap resamples of the fits' 95%% intervals (default 1000)",
    )
    add_seed(parser, "the random grid, prompts and bootstrap")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted profile from its checkpoint (NAME-samples.jsonl)",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start over, replacing an unfinished checkpoint"
    )
    parser.add_argument(
        "--overwrite", action="store_true",
        help="--out may hold an earlier profile: its files are replaced, and a sibling this run "
        "does not write (NAME-draft.yaml without --draft) removed (default: refused)",
    )  # fmt: skip


def grid_spec(args: argparse.Namespace) -> Any:
    from dataclasses import replace

    from edgespec.profiling.grid import QUICK_GRID, GridSpec

    spec = QUICK_GRID if args.quick else GridSpec()
    if args.scale != 1.0:
        s = args.scale
        new_tokens = _scaled(spec.new_tokens, s, 1)
        spec = replace(
            spec,
            cold_totals=_scaled(spec.cold_totals, s, 2),
            new_tokens=new_tokens,
            totals=_scaled(spec.totals, s, max(new_tokens) + 1),
        )
    if args.runs is not None:
        spec = replace(spec, runs=args.runs)
    if args.warmup is not None:
        spec = replace(spec, warmup_runs=args.warmup)
    return replace(spec, seed=args.seed, clock=args.clock)


def _scaled(counts: tuple[int, ...], scale: float, least: int) -> tuple[int, ...]:
    """Token counts times ``scale``, rounded, at least ``least``; each once, ascending
    (0.1 of 500 and 1000 would be 50 and 100, but of 1 and 5 both 1)."""
    return tuple(sorted({max(least, round(count * scale)) for count in counts}))


def _load(name: str, args: argparse.Namespace) -> Any:
    """The loaded model (:class:`edgespec.models.loading.LoadedModel`: model and weight files)."""
    from edgespec.models.loading import load_model

    placement = device_placement(args)
    return load_model(name, placement.dtype, verbose=args.verbose, device=placement.device)


def _load_pair(args: argparse.Namespace) -> tuple[Any, tuple[str, Any, Any] | None]:
    """The loaded target and the drafter triple profile_pair takes (or None), both on
    ``--device`` in ``--dtype``; a draft of another vocabulary refused before any work."""
    target_model = _load(args.target, args)
    if args.draft == NGRAM:
        from edgespec.runtime.backends.ngram import NgramDrafter

        return target_model, (NGRAM, NgramDrafter, None)
    if args.draft:
        from edgespec.runtime.backends.transformers_draft import TransformersDraft
        from edgespec.runtime.edge.draft_backends import check_pair_vocab

        draft_model = _load(args.draft, args).model
        vocab = target_model.model.config.get_text_config().vocab_size
        check_pair_vocab(args.draft, draft_model, vocab)  # it crashed after the target's grid
        return target_model, (args.draft, lambda: TransformersDraft(draft_model), draft_model)
    return target_model, None


def run(args: argparse.Namespace) -> int:
    if args.residuals is not None:
        from edgespec.profiling.residuals import print_residuals

        return print_residuals(args.residuals)
    error = check_args(args) or check_out(Path(args.out), args.overwrite)
    if error is not None:
        print(f"edgespec profile: {error}", file=sys.stderr)
        return 2
    import torch
    from rich.console import Console

    from edgespec.profiling.checkpoint import CheckpointError, checkpoint_path
    from edgespec.profiling.grid import design_grid
    from edgespec.profiling.measure import check_grid_context
    from edgespec.profiling.quality import fit_warnings
    from edgespec.profiling.run import write_profiles
    from edgespec.profiling.summary import print_summary

    device_placement(args)  # a GPU this machine lacks fails before anything loads
    torch.set_num_threads(args.threads)
    console = Console(stderr=True, markup=False, width=max(Console(stderr=True).width, 140))
    spec = grid_spec(args)
    try:
        resume = read_checkpoint(args, spec)
    except CheckpointError as exc:
        print(f"edgespec profile: {exc}", file=sys.stderr)
        return 2
    if args.resume:
        done_before = 0 if resume is None else len(resume.samples)
        num_configs = len(design_grid(spec))
        console.print(f"resuming: {done_before} of {num_configs} configurations already measured")
        if resume is not None and resume.draft_cells:
            console.print(f"resuming: {len(resume.draft_cells)} draft batch cells already timed")
    with console.status(f"loading {args.target}" + (f" and {args.draft}" if args.draft else "")):
        target, draft = _load_pair(args)
    check_grid_context(target.model, spec, args.scale)  # before the checkpoint: none to resume
    result = _measure(args, spec, resume, (target, draft), console)
    if result is None:
        return 130
    command = "edgespec profile " + shlex.join(sys.argv[2:] if len(sys.argv) > 2 else [])
    paths = write_profiles(result, Path(args.out), command)
    checkpoint_path(Path(args.out)).unlink()  # the report holds every sample
    print_summary(console, result, paths)
    for warning in fit_warnings(result):
        print(f"edgespec profile: {warning}", file=sys.stderr, flush=True)
    return 0


def batch_sizes(args: argparse.Namespace) -> tuple[int, ...]:
    """The batch sizes a model drafter is timed at (none without one)."""
    if args.draft in (None, NGRAM):
        return ()
    if args.draft_batches is not None:
        return tuple(args.draft_batches)
    return QUICK_DRAFT_BATCHES if args.quick else DRAFT_BATCHES


def _measure(
    args: argparse.Namespace, spec: Any, resume: Any, pair: tuple[Any, Any], console: Any
) -> Any:
    """Profile the loaded pair over the grid, each configuration appended to the
    checkpoint as it is measured; None when interrupted (Ctrl-C; SIGTERM's ``Terminated``
    is raised on), the checkpoint then keeping what was measured for ``--resume``, which
    a line says either way."""
    from rich.progress import Progress

    from edgespec.profiling.checkpoint import CheckpointWriter, checkpoint_path, setup_of
    from edgespec.profiling.draft_batch import batch_cells
    from edgespec.profiling.grid import design_grid
    from edgespec.profiling.run import DRAFT_CONTEXTS, profile_pair
    from edgespec.runtime.backends.mask_check_cache import checked_target
    from edgespec.runtime.commands.signals import Terminated

    num_configs = len(design_grid(spec))
    done_before = 0 if resume is None else len(resume.samples)
    target, draft = pair
    placement = device_placement(args)
    setup = setup_of(args.target, spec, args.threads, placement.device, placement.dtype)
    writer = CheckpointWriter(checkpoint_path(Path(args.out)), setup, append=resume is not None)
    with writer, Progress(console=console, transient=False) as progress:
        task = progress.add_task(
            f"profiling {args.target}", total=num_configs, completed=done_before
        )

        def on_config(_: Any) -> None:
            progress.advance(task)
            done = int(progress.tasks[0].completed)
            if not console.is_terminal and (done % 10 == 0 or done == num_configs):
                console.print(f"profiled {done}/{num_configs} configurations")  # a log line

        cells = batch_cells(batch_sizes(args), DRAFT_CONTEXTS)

        def on_draft_cell(cell: tuple[int, int], found: list[Any]) -> None:
            writer.add_draft((args.draft, args.gamma, *cell), found)
            where = f"{cells.index(cell) + 1}/{len(cells)}"
            console.print(f"timed draft batch b={cell[0]} at {cell[1]} tokens ({where} cells)")

        try:
            return profile_pair(
                args.target, target.model, checked_target(target.model, target.weight_files),
                spec, draft,
                gamma=args.gamma, num_bootstrap=args.bootstrap, on_config=on_config,
                resume=resume, on_measured=writer.add, draft_batches=batch_sizes(args),
                on_draft_cell=on_draft_cell,
            )  # fmt: skip
        except (KeyboardInterrupt, Terminated) as stop:  # Ctrl-C, or SIGTERM (kill PID)
            done = int(progress.tasks[0].completed)
            said = "interrupted" if isinstance(stop, KeyboardInterrupt) else "terminated"
            console.print(
                f"{said} after {done}/{num_configs} configurations; they are kept in "
                f"{writer.path}: run the same command with --resume to continue"
            )
            if isinstance(stop, Terminated):
                raise  # edgespec's own line and status for SIGTERM (143)
            return None
