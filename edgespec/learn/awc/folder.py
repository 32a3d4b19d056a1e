"""What ``edgespec train awc-data`` keeps in its ``--out`` folder besides the scenarios'
tables: ``run.json``, the settings that shape a scenario's rows (:func:`data_settings`),
written before the first scenario runs; ``labels.parquet`` and ``labels.json`` (the
``--w-*`` weights), recomputed from every finished scenario at the end of each run
(:func:`write_labels`); and ``last_run.json``, what the last run did (:func:`finish`).

A run on a folder whose ``run.json`` holds other settings is refused (exit code 2) naming
the settings that differ, as ``train wisv-data``'s store does
(:func:`~edgespec.learn.run_settings.record_run_settings`), so scenarios of two grids are
never mixed. The scenario count is not one of them: a scenario is drawn by (seed, id),
so a run with more ``--scenarios`` adds the new ones. A folder with finished scenarios
and no ``run.json`` (written before awc-data recorded its settings) is taken as made with
this run's settings, said once on stderr. A run that fails before its first scenario is
written (Ray could not start or join ``--address``, Ctrl-C) removes the ``run.json`` it
wrote and the folders it made (:func:`opened_folder`), so a later run with other settings
is not refused over a folder where nothing ran. A folder of shards (of ``train draft`` or
``train text-shards``) is refused before anything is written into it
(:func:`~edgespec.learn.drafts.shard_kinds.check_holds_no_shards`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.errors import UserInputError
from edgespec.learn.awc.grid import scenarios_text
from edgespec.learn.awc.tables import read_parquet_dir, write_parquet
from edgespec.learn.drafts.shard_kinds import check_holds_no_shards
from edgespec.learn.run_settings import RUN_FILE, file_digest, record_run_settings
from edgespec.output_paths import write_text_atomically

if TYPE_CHECKING:
    from rich.console import Console

    from edgespec.learn.awc.grid import AwcScenario


def data_settings(args: argparse.Namespace, grid: list[AwcScenario]) -> dict[str, Any]:
    """What shapes a scenario's rows: the grid (``--quick`` or not, the simulated seconds
    per run, ``--seed``), what a run keeps and the fused runs do, and the workload trace's
    SHA-256 (``None``: the bundled GSM8K table)."""
    trace = args.workload_trace
    return {
        "quick": bool(args.quick),
        "duration_s": grid[0].duration_s if grid else None,
        "seed": args.seed,
        "contexts_per_run": args.contexts_per_run,
        "fused_gamma": args.fused_gamma,
        "fused_rounds": args.fused_rounds,
        "workload_trace_sha256": None if trace is None else file_digest(trace),
    }


def finished_ids(out: Path) -> set[int]:
    """The scenarios of ``out`` with a contexts file (written last: finished)."""
    return {int(f.stem[1:]) for f in (out / "contexts").glob("s*.parquet")}


def open_folder(out: Path, settings: dict[str, Any], console: Console) -> None:
    """Create ``out`` with ``settings`` in its ``run.json``, or check that it holds the
    same (module docstring); a folder of shards is refused."""
    check_holds_no_shards("--out", out, "an awc-data run")
    done = finished_ids(out)
    if done and not (out / RUN_FILE).is_file():
        console.print(
            f"{out}: {len(done)} finished scenarios and no {RUN_FILE} (written before "
            "awc-data recorded its settings): taken as made with this run's settings",
            soft_wrap=True,  # one line, however wide
        )
    record_run_settings(out, settings, "an awc-data run")


SCENARIO_FOLDERS = ("configs", "contexts")
"""The folders of ``out`` that hold the scenarios' tables."""


@contextlib.contextmanager
def opened_folder(out: Path, settings: dict[str, Any], console: Console) -> Iterator[None]:
    """:func:`open_folder`; when the body raises (any exception, Ctrl-C too) and no
    scenario's table was written since, the ``run.json`` written here and the folders made
    here (``out`` and its parents, its :data:`SCENARIO_FOLDERS`) are removed again, each
    only while empty."""
    made = [folder for folder in (out, *out.parents) if not folder.exists()]
    made = [*(out / name for name in SCENARIO_FOLDERS if not (out / name).exists()), *made]
    recorded = (out / RUN_FILE).exists()
    before = _scenario_files(out)
    open_folder(out, settings, console)
    try:
        yield
    except BaseException:
        if not recorded and _scenario_files(out) == before:
            (out / RUN_FILE).unlink(missing_ok=True)
            for folder in made:  # deepest first
                with contextlib.suppress(OSError):  # not empty: kept
                    folder.rmdir()
        raise


def _scenario_files(out: Path) -> dict[str, int]:
    """Every scenario table of ``out`` and its modification time (ns)."""
    return {
        f"{name}/{path.name}": path.stat().st_mtime_ns
        for name in SCENARIO_FOLDERS
        for path in (out / name).glob("*.parquet")
    }


@dataclass(frozen=True, slots=True)
class Labelled:
    """What :func:`write_labels` labelled: scenario id → label γ (1 = fused), and how many
    finished scenarios got no label (no configuration finished a request)."""

    labels: dict[int, int]
    num_unlabelled: int


def write_labels(out: Path, weights: dict[str, float]) -> Labelled:
    """Label every finished scenario of ``out`` and write ``labels.parquet`` and
    ``labels.json``; when no scenario can be labelled, nothing is written and the run is
    refused, naming ``--duration-s``."""
    from edgespec.learn.awc.data import label_scenarios

    configs = read_parquet_dir(out / "configs")
    labels = label_scenarios(configs, weights)
    num_scenarios = len({int(i) for i in configs["scenario_id"]})
    if not labels:
        raise UserInputError(
            f"{out}: no configuration of its {num_scenarios} scenario"
            f"{'s' if num_scenarios > 1 else ''} finished a request, so none has a label: "
            "give a longer --duration-s, in a new --out (this folder keeps its settings)"
        )
    ids = sorted(labels)
    write_parquet({"scenario_id": ids, "label_gamma": [labels[i] for i in ids]},
                   out / "labels.parquet")  # fmt: skip
    write_text_atomically(out / "labels.json", json.dumps({"weights": weights}) + "\n")
    return Labelled(labels, num_scenarios - len(labels))


def finish(
    args: argparse.Namespace, weights: dict[str, float], num_run: int, wall_s: float,
    console: Console,
) -> None:  # fmt: skip
    """Label every finished scenario, write ``last_run.json`` and say what was done."""
    labelled = write_labels(args.out, weights)
    if labelled.num_unlabelled:
        total = len(labelled.labels) + labelled.num_unlabelled
        console.print(
            f"{labelled.num_unlabelled} of {total} scenarios finished no request in any "
            "configuration: left unlabelled (a longer --duration-s gives them time)",
            soft_wrap=True,
        )
    counts: dict[int, int] = {}
    for gamma in labelled.labels.values():
        counts[gamma] = counts.get(gamma, 0) + 1
    summary = {
        "command": "edgespec " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "finished": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "scenarios_run": num_run,
        "wall_s": round(wall_s, 1),
        "labels": {str(k): counts[k] for k in sorted(counts)},
        "unlabelled": labelled.num_unlabelled,
    }
    write_text_atomically(args.out / "last_run.json", json.dumps(summary, indent=1) + "\n")
    console.print(  # one line, the folder as it is, however long (was: wrapped at 80)
        f"{scenarios_text(num_run)} in {wall_s:.1f} s; "
        f"{len(labelled.labels)} labelled (label γ: count {summary['labels']}, 1 = fused) "
        f"→ {args.out}",
        soft_wrap=True,
    )
