"""`edgespec train awc-data` and `edgespec train awc`: the AWC dataset and the WC-DNN.

``awc-data`` runs the scenario grid of :mod:`edgespec.learn.awc.data` on Ray (a local Ray
with ``--workers`` CPUs, or the cluster at ``--address``) and writes, under ``--out``:
``configs/s<id>.parquet`` (one row per configuration) and ``contexts/s<id>.parquet`` (the
decision contexts) per scenario — the contexts file is written last, so a scenario with
one is finished and is not run again when the command is repeated (resumable) — then
``labels.parquet`` (scenario id → label γ, 1 = fused) from every finished scenario with
the ``--w-*`` weights. The folder's ``run.json`` keeps the settings that shape a
scenario's rows: a run with other ones is refused (:mod:`edgespec.learn.awc.folder`).
``awc`` trains the WC-DNN on such a directory
(:mod:`edgespec.learn.awc.train`) and writes its weights (JSON, the format
:func:`edgespec.policies.awc.load_wc_dnn` reads).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from edgespec.argument_types import (
    int_at_most,
    non_negative_float,
    positive_int,
    seconds_at_most,
)
from edgespec.arguments import (
    TrainingOptions,
    add_seed,
    add_threads,
    add_training_arguments,
    add_workers,
)
from edgespec.errors import UserInputError
from edgespec.learn.awc.data import DEFAULT_WEIGHTS, GAMMAS
from edgespec.learn.awc.tables import write_parquet
from edgespec.learn.finished import add_overwrite
from edgespec.learn.progress import progress_bar
from edgespec.learn.settings_checks import MAX_WIDTH, width_flag
from edgespec.output_paths import output_file, writable_output_folder

if TYPE_CHECKING:
    from edgespec.learn.awc.grid import AwcScenario


def fused_gamma(text: str) -> int:
    """``--fused-gamma``: one of the static windows every scenario runs (:data:`GAMMAS`), whose
    run's acceptance fills the fused contexts (another γ has no run, and NaN acceptance)."""
    value = positive_int(text)
    if value not in GAMMAS:
        raise argparse.ArgumentTypeError(
            f"must be one of the static windows {GAMMAS[0]} to {GAMMAS[-1]} (its run's "
            f"acceptance fills the fused contexts), got {value}"
        )
    return value


wc_dnn_width = width_flag("a wider WC-DNN's file is too large to load")
"""``--width``: an integer in ``[1, MAX_WIDTH]``."""


DEFAULT_SCENARIOS, DEFAULT_DURATION_S = 2000, 20.0
"""``awc-data``'s grid without ``--quick``: its ``--scenarios`` and ``--duration-s``."""
MAX_DURATION_S = 3_600
"""The longest run ``awc-data --duration-s`` takes (simulated seconds, one hour): each
scenario runs 12 times that long, with up to 192 drafts sending requests throughout."""


simulated_seconds = seconds_at_most(MAX_DURATION_S)
"""``--duration-s``: a finite number of seconds > 0, at most :data:`MAX_DURATION_S`."""


MAX_SCENARIOS = 100_000
"""The most grid points ``awc-data --scenarios`` draws (as a sweep's points): the whole
grid is built in memory before any runs."""
MAX_CONTEXTS_PER_RUN = 1_000
"""The most decision contexts ``awc-data --contexts-per-run`` keeps of a run: 12,000 rows
per scenario, and ``train awc`` reads every scenario's rows into memory."""


def objective_weights(args: argparse.Namespace) -> dict[str, float]:
    """The ``--w-*`` weights (each finite and >= 0, as parsed): not all 0, and adding up
    to a finite number (else every configuration's score is inf, a tie)."""
    weights = {"ttft": args.w_ttft, "tpot": args.w_tpot, "throughput": args.w_throughput}
    total = sum(weights.values())
    if total == 0:
        raise UserInputError("the --w-* weights are all 0: at least one must be > 0")
    if total == math.inf:
        raise UserInputError("the --w-* weights add up to more than a float holds (1.8e308)")
    return weights


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    w = DEFAULT_WEIGHTS
    p = sub.add_parser("awc-data", help="simulate the AWC scenario grid (static γ 2..12 + fused)")
    p.add_argument(
        "--out", type=writable_output_folder, required=True, help="dataset directory (resumable)"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="4 small scenarios (6 s, ≤ 8 drafts); not with --scenarios or --duration-s",
    )
    p.add_argument(
        "--scenarios",
        type=int_at_most(MAX_SCENARIOS, " (the grid is built in memory)"),
        default=None,
        help=f"grid points to draw, at most {MAX_SCENARIOS:,} "
        f"(default {DEFAULT_SCENARIOS}; not with --quick)",
    )
    p.add_argument(
        "--duration-s",
        type=simulated_seconds,
        default=None,
        help=f"simulated seconds per run, at most {MAX_DURATION_S:,} "
        f"(default {DEFAULT_DURATION_S:g}; not with --quick, which runs 6)",
    )
    p.add_argument(
        "--contexts-per-run",
        type=int_at_most(MAX_CONTEXTS_PER_RUN, " (train awc reads every context into memory)"),
        default=8,
        help=f"contexts kept per run, at most {MAX_CONTEXTS_PER_RUN:,} (default 8)",
    )
    p.add_argument(
        "--fused-gamma",
        type=fused_gamma,
        default=4,
        help=f"co-located window γ in fused runs, one of the static windows {GAMMAS[0]} to "
        f"{GAMMAS[-1]} (default 4)",
    )
    p.add_argument(
        "--fused-rounds",
        choices=["cloud_only", "colocated"],
        default="cloud_only",
        help="what the fused configuration runs: DSD's cloud_only (one target token per "
        "pass, the paper's two-way choice; default) or edgespec's colocated rounds",
    )
    p.add_argument(
        "--workload-trace",
        type=Path,
        default=None,
        help="GSM8K lengths from this workload trace (default: the bundled GSM8K table, "
        "DSD-Sim's own 400-request trace)",
    )
    p.add_argument(
        "--w-ttft",
        type=non_negative_float,
        default=w["ttft"],
        help=f"objective weight of TTFT, >= 0 (default {w['ttft']:g})",
    )
    p.add_argument(
        "--w-tpot",
        type=non_negative_float,
        default=w["tpot"],
        help=f"objective weight of TPOT, >= 0 (default {w['tpot']:g})",
    )
    p.add_argument(
        "--w-throughput",
        type=non_negative_float,
        default=w["throughput"],
        help=f"objective weight of throughput, >= 0 (default {w['throughput']:g})",
    )
    p.add_argument("--address", help="Ray cluster address (ray://host:10001); default: local")
    add_workers(p, 2, "local Ray CPUs / tasks in flight")
    add_seed(p, "the scenario draws")
    t = sub.add_parser("awc", help="train the WC-DNN on an awc-data directory")
    t.add_argument("--data", type=Path, required=True, help="an awc-data --out directory")
    t.add_argument("--out", type=output_file, required=True, help="write the weights (JSON) here")
    t.add_argument(
        "--width",
        type=wc_dnn_width,
        default=64,
        help=f"hidden width, at most {MAX_WIDTH} (default 64)",
    )
    add_training_arguments(
        t,
        defaults=TrainingOptions(100, 1e-3, 1e-2, 256, 0.2),
        helps={
            "epochs": "training epochs",
            "batch_size": "rows per step",
            "holdout": "share of scenarios held out",
        },
    )
    add_threads(t, 1)
    add_seed(t, "init, batches, holdout")
    add_overwrite(t, "an --out file already there")


def run(args: argparse.Namespace) -> int:
    if args.what == "awc":
        from edgespec.learn.awc.train import run_training

        return run_training(args)
    return run_data(args)


def scenario_grid(args: argparse.Namespace) -> list[AwcScenario]:
    """``--quick``'s 4 scenarios, or ``--scenarios`` grid points of ``--duration-s``;
    ``--quick`` with either of those is refused (its scenarios would ignore them)."""
    from edgespec.learn.awc.grid import full_scenarios, quick_scenarios

    given = [f"--scenarios {args.scenarios}"] if args.scenarios is not None else []
    given += [f"--duration-s {args.duration_s:g}"] if args.duration_s is not None else []
    if args.quick and given:
        raise UserInputError(
            f"--quick runs its own 4 scenarios of 6 simulated s: not with {' and '.join(given)}"
        )
    if args.quick:
        return quick_scenarios(args.seed)
    count = args.scenarios or DEFAULT_SCENARIOS
    return full_scenarios(count, args.seed, args.duration_s or DEFAULT_DURATION_S)


def run_data(args: argparse.Namespace) -> int:
    from rich.console import Console

    from edgespec.learn.awc.data import AwcTask, run_awc_scenario
    from edgespec.learn.awc.folder import data_settings, finish, finished_ids, opened_folder
    from edgespec.learn.awc.grid import scenarios_text
    from edgespec.sweeps.executor import check_workers, make_executor

    check_workers(args.workers, args.address)
    weights = objective_weights(args)
    grid = scenario_grid(args)
    console = Console(stderr=True, markup=False, soft_wrap=True)  # a line per message
    trace = args.workload_trace
    if trace is not None and not trace.is_file():
        raise UserInputError(f"--workload-trace {trace}: no such file")
    lengths = _workload_lengths(trace)
    console.print(f"GSM8K lengths: {trace or 'the bundled gsm8k table'}")
    with opened_folder(args.out, data_settings(args, grid), console):
        done = finished_ids(args.out)
        todo = [AwcTask(s, args.contexts_per_run, args.fused_gamma, lengths, args.fused_rounds)
                for s in grid if s.scenario_id not in done]  # fmt: skip
        console.print(f"{scenarios_text(len(grid))}, {len(grid) - len(todo)} already done")
        executor = make_executor(args.workers, engine="ray", address=args.address)
        start = time.perf_counter()
        with progress_bar(console, "scenarios", len(todo), remaining=True) as update:
            for _, rows in executor.map_unordered(run_awc_scenario, todo) if todo else ():
                name = f"s{rows.scenario_id:05d}.parquet"
                write_parquet(rows.configs, args.out / "configs" / name)
                write_parquet(rows.contexts, args.out / "contexts" / name)
                update(advance=1)
    finish(args, weights, len(todo), time.perf_counter() - start, console)
    return 0


def _workload_lengths(trace: Path | None) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``--workload-trace``'s (prompt, output) lengths, or ``None`` without one; a trace
    the reader refuses is refused naming the flag (was: the reader's line alone)."""
    from edgespec.learn.awc.data import workload_lengths

    if trace is None:
        return None
    try:
        return workload_lengths(str(trace))
    except UserInputError as error:
        raise UserInputError(f"--workload-trace {trace}: {error}") from error
