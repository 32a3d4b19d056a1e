"""``edgespec reproduce wisp-estimator``: claim W9 alone, on the bundled samples or on a
profile measured on this machine.

    edgespec reproduce wisp-estimator                       # the bundled samples: W9 as in
                                                            # edgespec reproduce wisp
    edgespec profile --target gemma3-270m --scale 0.15 --warmup 0 --runs 2 --threads 1 \\
        --clock cpu --out runs/w9/gemma.yaml                # re-measure here, then
    edgespec reproduce wisp-estimator --samples runs/w9/gemma-report.json

``--save-samples FILE --machine TEXT`` also writes the report's samples as a samples file
(:mod:`edgespec.profiling.samples`: the form bundled under
``edgespec/data/hardware/measured/``), with the machine and the date (``--date``, default
today, UTC).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from edgespec.errors import UserInputError
from edgespec.output_paths import check_distinct_outputs, output_file, write_text_atomically


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--samples",
        type=Path,
        help="an edgespec profile NAME-report.json or a samples file (default: the bundled "
        "Gemma 3 270M samples of a 2-core CPU)",
    )
    parser.add_argument(
        "--json", type=output_file, metavar="FILE", help="also write the fit and its scores here"
    )
    parser.add_argument(
        "--save-samples",
        type=output_file,
        metavar="FILE",
        help="write --samples REPORT's timed batches as a samples file (needs --machine)",
    )
    parser.add_argument("--machine", help="with --save-samples: the machine, in words")
    parser.add_argument(
        "--code",
        default="not recorded",
        help="with --save-samples: the edgespec version that measured (commit, backend; "
        "default 'not recorded')",
    )
    parser.add_argument(
        "--date",
        default=time.strftime("%Y-%m-%d", time.gmtime()),
        help="with --save-samples: the date of the measurement (default today, UTC)",
    )


def check_args(args: argparse.Namespace) -> str | None:
    """An error message for bad arguments, or None."""
    if args.save_samples is not None and (args.samples is None or not args.machine):
        return "--save-samples needs --samples REPORT and --machine TEXT"
    check_distinct_outputs(("--json", args.json), ("--save-samples", args.save_samples))
    return None


def save_samples(report: Path, out: Path, args: argparse.Namespace) -> None:
    """Write ``report``'s samples (an ``edgespec profile`` NAME-report.json) to ``out``
    with ``args``' machine, date and code."""
    from edgespec.profiling.samples import samples_document, write_document

    doc = samples_document(json.loads(report.read_text()), args.machine, args.date, args.code)
    out.parent.mkdir(parents=True, exist_ok=True)  # tried when the flags were parsed
    write_document(doc, out)
    print(f"wrote {out}: {len(doc['samples'])} samples; {doc['grid']}")


def run(args: argparse.Namespace) -> int:
    from edgespec.profiling.samples import load_samples
    from edgespec.reproduce.printed import print_claims
    from edgespec.reproduce.wisp.estimator import check_estimator, estimator_dict, w9_rows

    error = check_args(args)
    if error is not None:
        raise UserInputError(error)
    samples = load_samples(args.samples)
    check = check_estimator(samples.points)
    print_claims(w9_rows(check, samples))
    for row in w9_rows(check, samples):
        if row.note:
            print(f"{row.what}: {row.note}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)  # tried when the flags were parsed
        write_text_atomically(
            args.json, json.dumps(estimator_dict(check, samples), indent=1) + "\n"
        )
        print(f"wrote {args.json}")
    if args.save_samples is not None:
        save_samples(args.samples, args.save_samples, args)
    return 0
