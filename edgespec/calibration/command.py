"""Calibration check: one small scenario run for real and in the simulator.

``edgespec calibrate [--target synthetic|NAME] [--draft ...]``

1. Profile the pair on this machine (:func:`edgespec.profiling.run.profile_pair`, a
   grid sized to the scenario) unless ``--profile`` names existing files of this pair
   (their ``model:`` fields name ``--target`` and ``--draft``).
2. Measure the loopback link: one client runs a request through the gRPC server; the
   median per-round network time (round wall time − draft − queue − verify) is the RTT.
3. Real run: ``--clients`` drafter processes (one torch thread each), each running
   ``--requests`` requests one after another through :class:`RemoteVerifier` against one
   server in this process (:class:`ServerThread`, FCFS batching), all started together.
4. The requests' per-position acceptance (from their rounds) and lengths become a trace;
   the simulator replays it with the profile's cost models, the measured RTT and the same
   topology, batching and γ.
5. TPOT (mean over requests), throughput (committed tokens / makespan) and AAL (accepted
   draft tokens per round) of both runs, computed by the same code from the
   ``RequestRecord`` s, and their relative differences.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from edgespec.argument_types import positive_int, repetitions, seed_int, warmup_repetitions
from edgespec.arguments import (
    MAX_DRAFTER_PROCESSES,
    add_max_new_tokens,
    add_threads,
    add_verbose,
    drafter_processes,
)
from edgespec.calibration.checks import (
    DEFAULT_DATASET,
    DEFAULT_PROMPT_TOKENS,
    SYNTHETIC,
    GivenProfile,
    check_counts,
    check_pair_names,
    check_profiles,
)
from edgespec.calibration.comparison import compare
from edgespec.calibration.folder import calibration_folder, check_resume
from edgespec.calibration.fresh_profile import profile_scenario
from edgespec.calibration.runs import (
    DrafterProcessError,
    RealRun,
    link_rtt_ms,
    run_real,
    simulate_run,
    write_trace,
)
from edgespec.calibration.stops import PROFILING, RUNNING, SIMULATING, CalibrationSteps
from edgespec.errors import check_fits_context
from edgespec.output_paths import writable_output_folder, write_text_atomically
from edgespec.profiling.files import profile_files
from edgespec.profiling.quality import MIN_PROFILE_R2
from edgespec.runtime.edge.draft_backends import check_pair_vocab

_NUMBERS: tuple[tuple[str, Callable[[str], int], int, str], ...] = (
    ("--clients", drafter_processes, 4, f"drafter processes, at most {MAX_DRAFTER_PROCESSES}"),
    ("--requests", positive_int, 2, "requests per client, in sequence"),
    ("--gamma", positive_int, 4, "static window γ, tokens"),
    ("--warmup", warmup_repetitions, 2, "profile warm-up runs per configuration, at most 1,000"),
    ("--runs", repetitions, 3, "profile timed runs per configuration, at most 1,000"),
    ("--seed", seed_int, 0, "synthetic prompts, simulation"),
)
"""calibrate's counts: flag, type, default, help (the default is appended)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default="synthetic", help="'synthetic' (default), a model or dir")
    p.add_argument(
        "--draft", default="truncated", help="'truncated' (default; synthetic), 'ngram', a model"
    )
    p.add_argument(
        "--dataset", default=None,
        help=f"a model target's prompt set, test split (default {DEFAULT_DATASET})",
    )  # fmt: skip
    p.add_argument(
        "--prompt-tokens", type=positive_int, default=None,
        help=f"the synthetic target's prompt tokens (default {DEFAULT_PROMPT_TOKENS})",
    )  # fmt: skip
    add_max_new_tokens(p, 48)
    add_threads(p, 2)
    add_verbose(p)
    p.add_argument(
        "--profile",
        help="use this target profile, .yaml or .yml (with its -draft file beside it) instead "
        f"of profiling (a fresh profile's held-out R² below {MIN_PROFILE_R2} is warned of on "
        "stderr)",
    )
    p.add_argument(
        "--out", type=writable_output_folder, default=None,
        help="output directory (default runs/calibration-<time>)",
    )  # fmt: skip
    p.add_argument(
        "--resume", action="store_true",
        help="go on with the partial profile a calibration stopped while profiling kept in "
        "--out (its configurations already measured are not measured again)",
    )  # fmt: skip
    p.add_argument(
        "--overwrite", action="store_true",
        help="--out may hold an earlier calibration: its files are removed once every check "
        "has passed (a --profile given is kept, with its -draft and -report files; default: "
        "refused)",
    )  # fmt: skip
    for flag, kind, default, text in _NUMBERS:
        p.add_argument(flag, type=kind, default=default, help=f"{text} (default {default})")


@dataclass(frozen=True, slots=True)
class _Pair:
    """The loaded pair: the draft factory is picklable (each drafter process of the real
    run calls it); ``target_files``: the target's weight files (none for a model built in
    memory), what its exactness probes are recorded under."""

    target_name: str
    target_model: Any
    target_files: tuple[Path, ...]
    draft_name: str
    make_draft: Callable[[], Any]
    draft_model: Any
    tokenizer: Any


def _pair(args: argparse.Namespace) -> _Pair:
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.backends.transformers_draft import TransformersDraft

    if args.target == SYNTHETIC:
        from edgespec.runtime.testing import layer_truncated_copy, tiny_llama

        target = tiny_llama(0, num_layers=8, vocab_size=4096, hidden_size=256, logit_scale=5.0,
                            quiet_layers_from=2, quiet_scale=0.03)  # fmt: skip
        if args.draft == "ngram":
            return _Pair(SYNTHETIC, target, (), "ngram", NgramDrafter, None, None)
        draft = layer_truncated_copy(target, 2)
        make = partial(TransformersDraft, draft)
        return _Pair(SYNTHETIC, target, (), "truncated", make, draft, None)
    from edgespec.models.loading import load_model

    loaded = load_model(args.target, verbose=args.verbose)
    target, files, tokenizer = loaded.model, loaded.weight_files, loaded.tokenizer
    if args.draft == "ngram":
        return _Pair(args.target, target, files, "ngram", NgramDrafter, None, tokenizer)
    model = load_model(args.draft, verbose=args.verbose, with_tokenizer=False).model
    make = partial(TransformersDraft, model)
    return _Pair(args.target, target, files, args.draft, make, model, tokenizer)


def _prompts(
    args: argparse.Namespace, tokenizer: Any, vocab: int, context: int
) -> list[list[tuple[int, ...]]]:
    """Each client's prompts; all of them with ``--max-new-tokens`` within ``context``."""
    n = args.clients * args.requests
    new = ("--max-new-tokens", args.max_new_tokens, context)
    if tokenizer is None:
        from edgespec.profiling.measure import PromptSource

        size = args.prompt_tokens or DEFAULT_PROMPT_TOKENS
        check_fits_context("--prompt-tokens", size, *new)
        source = PromptSource(vocab, args.seed + 100)
        flat = [source.take(size) for _ in range(n)]
    else:
        from edgespec.datasets.prompts import load_prompts

        dataset = args.dataset or DEFAULT_DATASET
        texts = [p.text for p in load_prompts(dataset, "test", n)]
        flat = [tuple(tokenizer(t)["input_ids"]) for t in texts]
        longest = max(len(prompt) for prompt in flat)
        check_fits_context(f"the longest {dataset} prompt", longest, *new)
    return [flat[i :: args.clients] for i in range(args.clients)]


def run(args: argparse.Namespace) -> int:
    """Refuse what cannot run before anything loads (and the folder is made), then profile
    (unless ``--profile``), measure the link, run for real, simulate and compare; stopped
    (Ctrl-C, SIGTERM), say what the folder holds of this run and how to go on
    (:meth:`CalibrationSteps.stopped_line`) before ``edgespec calibrate: interrupted``."""
    from edgespec.runtime.commands.signals import Terminated

    check_counts(args)
    check_resume(args)
    check_pair_names(args)
    given = check_profiles(args)
    from edgespec.sim.run_folder import made_run_folder

    out = calibration_folder(args, remove=False)  # a new default folder is made (claimed)
    steps = CalibrationSteps(out, profiled=given is None, made_out=args.out is None)
    with made_run_folder(out, claimed=True) if args.out is None else nullcontext(out):
        try:
            return _calibrate(args, given, steps)
        except (KeyboardInterrupt, Terminated) as stop:  # the command's own line follows
            said = "interrupted" if isinstance(stop, KeyboardInterrupt) else "terminated"
            steps.remove_unused_out()
            print(f"edgespec calibrate: {steps.stopped_line(said)}", file=sys.stderr, flush=True)
            raise


def _calibrate(
    args: argparse.Namespace, given: GivenProfile | None, steps: CalibrationSteps
) -> int:
    """:func:`run` once its checks before loading have passed, ``steps`` advanced as it goes."""
    import torch

    from edgespec.runtime.backends.mask_check_cache import checked_target

    torch.set_num_threads(args.threads)
    pair = _pair(args)
    t_name, d_name, make_draft = pair.target_name, pair.draft_name, pair.make_draft
    backend = checked_target(pair.target_model, pair.target_files)
    check_pair_vocab(args.draft, pair.draft_model, backend.vocab_size)  # before profiling
    prompts = _prompts(args, pair.tokenizer, backend.vocab_size, backend.max_context_tokens)
    out = steps.out
    if args.out is not None:  # an earlier run's files go only once nothing more is refused
        calibration_folder(args)
    steps.made_out = steps.made_out or not out.exists()
    out.mkdir(parents=True, exist_ok=True)  # made only once nothing more is refused
    steps.step = PROFILING if given is None else RUNNING
    target = (t_name, pair.target_model, backend)
    draft = (d_name, make_draft, pair.draft_model)
    if given is None:  # profile_lines: which profile, recorded in comparison.md
        fresh = profile_scenario(args, out, target, draft, prompts)
        target_profile, profile_lines = fresh.path, fresh.fit_lines
        draft_profile = profile_files(fresh.path).draft
    else:
        longest = max(len(prompt) for client in prompts for prompt in client)
        extrapolated = given.range_warnings(args.clients, longest + args.max_new_tokens)
        target_profile, draft_profile = given.target, given.draft
        profile_lines = (given.line(), *extrapolated)
        print(given.line(), flush=True)
        for warning in extrapolated:  # said as the simulator says it, kept in comparison.md
            print(f"edgespec calibrate: {warning}", file=sys.stderr, flush=True)
    steps.step = RUNNING
    try:
        rtt, real = _real_runs(args, backend, make_draft, prompts)
    except DrafterProcessError as exc:  # one line, and what this run left in its folder
        print(f"edgespec calibrate: {exc}; {steps.left_behind()}", file=sys.stderr)
        return 1
    trace = write_trace(real, out / "trace.jsonl")
    steps.step = SIMULATING
    sim = simulate_run(trace, target_profile, draft_profile, rtt, args.clients, args.gamma,
                       args.clients, args.seed)  # fmt: skip
    table = compare(real, sim, rtt).table()
    header = (
        f"{t_name} + {d_name}, {args.clients} clients x {args.requests} requests, "
        f"γ={args.gamma}, {args.max_new_tokens} new tokens, loopback RTT {rtt:.2f} ms, "
        f"load average {' '.join(f'{x:.2f}' for x in real.load_average)}"
    )
    print(f"{header}\n\n{table}")
    write_text_atomically(out / "comparison.md", comparison_text(header, profile_lines, table))
    return 0


def _real_runs(
    args: argparse.Namespace, backend: Any, make_draft: Callable[[], Any], prompts: Any
) -> tuple[float, RealRun]:
    """The loopback link's RTT (one client, one request), then the real run."""
    print("measuring the loopback link (1 client) ...", file=sys.stderr, flush=True)
    probe = run_real(backend, make_draft, [prompts[0][:1]], args.max_new_tokens, args.gamma,
                     args.clients, "probe")  # fmt: skip
    print(
        f"real run: {args.clients} clients x {args.requests} requests ...",
        file=sys.stderr,
        flush=True,
    )
    real = run_real(backend, make_draft, prompts, args.max_new_tokens, args.gamma, args.clients)
    return link_rtt_ms(probe), real


def comparison_text(header: str, profile_lines: tuple[str, ...], table: str) -> str:
    """``comparison.md``: the header and table as printed, and under the header the
    profile's lines: a fresh profile's fit (its summary, and the held-out R² warning when
    there is one), or the ``--profile`` files read
    (:meth:`edgespec.calibration.checks.GivenProfile.line`) and each said to be used beyond
    what it measured (:meth:`~edgespec.calibration.checks.GivenProfile.range_warnings`)."""
    return "\n".join((header, *profile_lines, "", table)) + "\n"
