"""The bundled Gemma's tokenizer loaded alone, from an empty cache (README, "gemma3-270m").

    python benchmarks/probes/tokenizer_load.py [--json PATH]

In a temporary ``$EDGESPEC_CACHE``, times ``load_tokenizer("gemma3-270m")`` twice (the
first writes the tokenizer's own copy from the GGUF, the second reads it), then
``gemma_directory()`` (the weights' conversion, which a tokenizer-alone load no longer
does), in one process; prints (and writes to ``--json PATH``, :mod:`probe_json`) the
seconds of each and the megabytes each copy holds on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from probe_json import add_json_option, finish


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_json_option(parser)
    return parser.parse_args(argv)


def seconds_of(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return round(time.perf_counter() - start, 1)


def megabytes(folder: Path) -> float:
    """What the files directly in ``folder`` hold, in MB (10^6 bytes)."""
    return round(sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) / 1e6, 1)


def measure(cache: Path) -> dict[str, Any]:
    """The three loads' seconds and the two copies' sizes, with ``cache`` as the cache."""
    os.environ["EDGESPEC_CACHE"] = str(cache)  # this probe's own process: read at each load
    from edgespec.models.gemma_cache import gemma_directory
    from edgespec.models.loading import load_tokenizer

    results: dict[str, Any] = {
        "tokenizer_cold_s": seconds_of(lambda: load_tokenizer("gemma3-270m")),
        "tokenizer_warm_s": seconds_of(lambda: load_tokenizer("gemma3-270m")),
        "weights_conversion_s": seconds_of(gemma_directory),
    }
    models = cache / "models"
    results["tokenizer_copy_mb"] = megabytes(models / "gemma3-270m-tokenizer")
    results["fp32_copy_mb"] = megabytes(models / "gemma3-270m-fp32")
    return results


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    with tempfile.TemporaryDirectory(prefix="edgespec-cache-") as cache:
        results = measure(Path(cache))
    print(json.dumps(results), flush=True)
    finish(args.json, "tokenizer_load.py", argv, results)


if __name__ == "__main__":
    main()
