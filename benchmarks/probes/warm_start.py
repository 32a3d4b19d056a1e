"""A warm ``load_model("gemma3-270m")`` (the fp32 copy cached) with and without the
bytecode ``make`` compiles as it creates .venv (``tools/warm_bytecode.py``), where the
environment sets ``PYTHONDONTWRITEBYTECODE`` (README, "gemma3-270m").

    python benchmarks/probes/warm_start.py [REPEATS] [--json PATH]   # default 2 repeats

Each load runs in a fresh interpreter with ``PYTHONDONTWRITEBYTECODE=1`` and its own
``PYTHONPYCACHEPREFIX``: an empty folder (no bytecode: every module compiled as imported,
nothing written), or one ``tools/warm_bytecode.py`` filled first; alternately, ``REPEATS``
times each. Prints (and writes to ``--json PATH``, :mod:`probe_json`) each load's seconds,
the medians and their ratio. The .venv's own ``__pycache__`` folders are not read
(the prefix replaces them) nor touched.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probe_json import add_json_option, finish, positive_int

ROOT = Path(__file__).resolve().parents[2]
LOAD = "from edgespec.models.loading import load_model; load_model('gemma3-270m')"


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repeats", nargs="?", type=positive_int, default=2, metavar="REPEATS")
    add_json_option(parser)
    return parser.parse_args(argv)


def run(code: list[str], prefix: Path, write: bool) -> float:
    """Seconds of ``python CODE...`` with bytecode under ``prefix`` (written if ``write``)."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(prefix),
               PYTHONDONTWRITEBYTECODE="" if write else "1")  # fmt: skip
    start = time.perf_counter()
    subprocess.run([sys.executable, *code], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return round(time.perf_counter() - start, 2)


def measure(repeats: int, cold: Path, warm: Path) -> dict[str, Any]:
    """The warm-up's seconds, then each load's without and with its bytecode."""
    results: dict[str, Any] = {"warm_bytecode_s": run(["tools/warm_bytecode.py"], warm, True)}
    seconds: dict[str, list[float]] = {"no_bytecode": [], "bytecode": []}
    for _ in range(repeats):
        seconds["no_bytecode"].append(run(["-c", LOAD], cold, False))
        seconds["bytecode"].append(run(["-c", LOAD], warm, False))
    results |= {f"{name}_s": runs for name, runs in seconds.items()}
    medians = {name: statistics.median(runs) for name, runs in seconds.items()}
    results |= {f"{name}_median_s": value for name, value in medians.items()}
    results["bytecode_over_no_bytecode"] = round(medians["bytecode"] / medians["no_bytecode"], 2)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as warm:
        results = measure(args.repeats, Path(cold), Path(warm))
    print(json.dumps(results), flush=True)
    finish(args.json, "warm_start.py", argv, results)


if __name__ == "__main__":
    main()
