"""`edgespec train stop-predictor`: the rejection predictor study on real-pair traces.

Reads traces captured with the neural draft alone (``edgespec trace --draft
gemma3-270m-draft --split train``), runs :func:`edgespec.learn.stop.study.run_study`,
writes the MLP predictor (``--out``, JSON, the format
:func:`edgespec.policies.stop_drafting.load_stop_policy` reads) and the report
(``--report-dir``: ``study.json`` and ``REPORT.md``). The bundled predictor
``edgespec/data/predictors/gemma3-270m-draft.json`` was made with the command in
docs/LEARN.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from edgespec.argument_types import positive_int
from edgespec.arguments import add_seed, add_threads
from edgespec.errors import UserInputError, did_you_mean
from edgespec.learn.finished import (
    STOP_REPORT,
    add_overwrite,
    check_file_replaceable,
    check_replaceable,
)
from edgespec.output_paths import output_file, writable_output_folder, write_text_atomically

if TYPE_CHECKING:
    from rich.console import Console

    from edgespec.learn.stop.study import StopStudy, StudySettings
    from edgespec.learn.traces.records import TraceRecord

BUNDLED_TRACES = Path(__file__).resolve().parents[2] / "data" / "predictors"
"""The bundled trace sets ``--traces NAME`` names (``edgespec/data/predictors/NAME.jsonl``)."""


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stop-predictor", help="train and compare WISP rejection predictors on real-pair traces"
    )
    p.add_argument(
        "--traces",
        type=Path,
        action="append",
        required=True,
        help="trace JSONL file or a directory of them (repeatable), or a bundled trace set by "
        "name (gemma3-270m-draft-train: edgespec/data/predictors/); neural draft, no lookup",
    )
    p.add_argument(
        "--out", type=output_file, required=True, help="write the MLP predictor (JSON) here"
    )
    p.add_argument(
        "--report-dir",
        type=writable_output_folder,
        help="write study.json and REPORT.md here (default: print REPORT.md only)",
    )
    p.add_argument(
        "--k-max",
        type=positive_int,
        default=4,
        help="window K_max the rows are built at, tokens (default 4)",
    )
    p.add_argument(
        "--mlp-trials", type=positive_int, default=8, help="MLP search trials (default 8)"
    )
    p.add_argument(
        "--tree-trials",
        type=positive_int,
        default=6,
        help="search trials per tree baseline (default 6)",
    )
    p.add_argument(
        "--latency-calls",
        type=positive_int,
        default=1000,
        help="single-sample timing calls (default 1000)",
    )
    add_threads(p, 1)
    add_seed(p, "the request split and searches")
    add_overwrite(p, "an --out file, or --report-dir's study.json and REPORT.md, already there")


def trace_files(paths: list[Path]) -> list[Path]:
    """The JSONL files named, directories expanded (sorted); a missing path is an error."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise UserInputError(f"--traces {path}: the directory holds no .jsonl files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        elif (BUNDLED_TRACES / f"{path.name}.jsonl").is_file() and path.name == str(path):
            files.append(BUNDLED_TRACES / f"{path.name}.jsonl")
        else:
            names = sorted(p.stem for p in BUNDLED_TRACES.glob("*.jsonl"))
            raise UserInputError(
                f"--traces {path}: no such file or directory, nor a bundled trace set "
                f"({', '.join(names)}){did_you_mean(str(path), names)}"
            )
    _refuse_repeats(files)
    return files


def _refuse_repeats(files: list[Path]) -> None:
    """A trace file named twice (as given, through a directory, or a byte-identical copy)
    is refused: its requests would count twice and sit on both sides of the request split
    (was: taken, so held-out requests were also training requests)."""
    import hashlib

    seen: dict[str, Path] = {}
    for file in files:
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        if digest in seen:
            raise UserInputError(
                f"--traces {file}: the same traces as {seen[digest]} (given twice, or a "
                "copy); give each once: its requests would be both training and test requests"
            )
        seen[digest] = file


def run(args: argparse.Namespace) -> int:
    check_file_replaceable("--out", args.out, "the stop predictor", args.overwrite)
    if args.report_dir is not None:
        check_replaceable("--report-dir", args.report_dir, STOP_REPORT, args.overwrite)
    import torch
    from rich.console import Console

    from edgespec.learn.stop.study import StudySettings

    torch.set_num_threads(args.threads)  # this command owns its process
    console = Console(stderr=True, markup=False, soft_wrap=True)  # a line per message
    records = read_records(args.traces)
    settings = StudySettings(
        k_max=args.k_max,
        mlp_trials=args.mlp_trials,
        tree_trials=args.tree_trials,
        latency_calls=args.latency_calls,
        seed=args.seed,
    )
    command = "edgespec " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    try:
        study = _study_with_progress(records, settings, console)
    except ValueError as exc:  # too few requests, one class in a split: name the traces
        named = " ".join(f"--traces {path}" for path in args.traces)
        raise UserInputError(f"{named}: {exc}") from exc
    threshold = write_study(study, args.out, args.report_dir, command, when)
    console.print(f"wrote {args.out} (threshold {threshold:.3f})", soft_wrap=True)  # one line
    return 0


def _study_with_progress(
    records: list[TraceRecord], settings: StudySettings, console: Console
) -> StopStudy:
    """The study, saying what it does: on a terminal a status line, elsewhere one log line
    per step (each search trial, each predictor evaluated; was: nothing for the minute and
    a half the default study takes)."""
    from edgespec.learn.stop.study import run_study

    if not console.is_terminal:
        return run_study(records, settings, log=lambda m: console.print(m, soft_wrap=True))
    with console.status("training predictors") as status:
        return run_study(records, settings, log=lambda m: status.update(m[:120]))


def read_records(paths: list[Path]) -> list[TraceRecord]:
    """Every record of the ``--traces`` files (:func:`trace_files`); a bad file, a record
    that gives no rows (:func:`~edgespec.learn.stop.data.check_record`), or a request traced
    twice (its rows would sit on both sides of the request split) is a usage error naming
    the file."""
    from edgespec.config import ConfigError
    from edgespec.learn.stop.data import check_record
    from edgespec.learn.traces.records import read_trace

    records: list[TraceRecord] = []
    traced: dict[str, Path] = {}  # request id -> the file that holds it
    for file in trace_files(paths):
        try:
            found = read_trace(file)
            for record in found:
                check_record(record)
        except (ConfigError, ValueError) as exc:  # a line's error names PATH:LINE itself
            said = str(exc)
            where = "" if said.startswith(f"{file}:") else f"{file}: "
            raise UserInputError(f"--traces {where}{said}") from exc
        for record in found:
            if (first := traced.get(record.request_id)) is not None:
                also = "twice in it" if first == file else f"in {first} too"
                raise UserInputError(
                    f"--traces {file}: request {record.request_id} is traced {also}; give "
                    "each request once: its rows would be both training and test rows"
                )
            traced[record.request_id] = file
        records.extend(found)
    return records


def write_study(
    study: StopStudy, out: Path, report_dir: Path | None, command: str, when: str
) -> float:
    """The MLP predictor (with the run's metadata) to ``out``; ``study.json`` and
    ``REPORT.md`` to ``report_dir`` when given; REPORT.md printed. Returns the MLP's
    threshold."""
    from edgespec.learn.stop.report import study_markdown

    meta = {
        "command": command,
        "trained": when,
        "k_max": study.settings.k_max,
        "threshold_rule": "maximum balanced accuracy on the validation requests",
        "dataset": study.balance["all"],
        "test": dataclasses.asdict(study.predictors[0].test),
        "threshold_plateau": dataclasses.asdict(study.predictors[0].plateau),
    }
    policy = dataclasses.replace(study.mlp, metadata=meta)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(out, json.dumps(policy.to_json(), separators=(",", ":")) + "\n")
    markdown = study_markdown(study, command, when)
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        study_json = json.dumps(study.to_json(), indent=1) + "\n"
        write_text_atomically(report_dir / "study.json", study_json)
        write_text_atomically(report_dir / "REPORT.md", markdown)
    print(markdown)
    return float(policy.threshold)
