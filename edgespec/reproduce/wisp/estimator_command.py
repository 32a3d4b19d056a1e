"""``edgespec reproduce wisp-estimator``: claim W9 alone, on the bundled samples or on a
profile measured on this machine.

    edgespec reproduce wisp-estimator                       # the bundled samples: W9 as in
                                                            # edgespec reproduce wisp
    edgespec profile --target gemma3-270m --scale 0.15 --warmup 0 --runs 2 --threads 1 \\
        --clock cpu --out runs/w9/gemma.yaml                # re-measure here, then
    edgespec reproduce wisp-estimator --samples runs/w9/gemma-report.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--samples",
        type=Path,
        help="an edgespec profile NAME-report.json or a samples file (default: the bundled "
        "Gemma 3 270M samples of a 2-core CPU)",
    )
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="also write the fit and its scores here"
    )


def run(args: argparse.Namespace) -> int:
    from edgespec.profiling.samples import load_samples
    from edgespec.reproduce.printed import print_claims
    from edgespec.reproduce.wisp.estimator import check_estimator, estimator_dict, w9_rows

    samples = load_samples(args.samples)
    check = check_estimator(samples.points)
    print_claims(w9_rows(check, samples))
    for row in w9_rows(check, samples):
        if row.note:
            print(f"{row.what}: {row.note}")
    if args.json is not None:
        args.json.write_text(json.dumps(estimator_dict(check, samples), indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0
