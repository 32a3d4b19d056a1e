"""The folder an ``edgespec sim`` run writes (``--out DIR``, else ``runs/<name>-<time>``),
claimed before the run starts so that it holds one run's files and no other's.

A folder named by ``--out`` that already holds files a run writes (:data:`RUN_FILES`) is
refused, naming them, unless ``--overwrite`` is given; then exactly those files are removed
first, so no plot, record file or summary of the earlier run is left beside the new one
(``--no-plots`` or a run without ``--rounds`` would otherwise keep the old ones). Other
files in the folder are never touched. The default folder is new: when two runs of one
scenario start in the same second, the second gets ``-2`` and so on."""

from __future__ import annotations

from pathlib import Path

from edgespec.output_paths import claim_folder

RUN_FILES = (
    "metrics.json",
    "scenario.yaml",
    "requests.csv",
    "requests.parquet",
    "batches.parquet",
    "rounds.csv",
    "rounds.parquet",
    "attribution.json",
    "attribution.png",
    "latency_cdf.png",
    "slo_attainment.png",
    "utilization.png",
    "batch_sizes.png",
    "sweep.json",
    "sweep.csv",
    "capacity.json",
    "shards.json",
    "pipeline.json",
)
"""Every file a plain, sweep, capacity, sharded or drafting-server run writes."""


def claim_run_folder(out: Path | None, name: str, overwrite: bool, stamp: str) -> Path:
    """The folder this run writes: ``out`` when it holds no earlier run's files (or
    ``overwrite``: those files removed now); without ``out`` a new ``runs/<name>-<stamp>``
    (``-2``, ``-3`` ... when taken). Nothing is created here (the run makes the folder when
    it writes)."""
    return claim_folder(out, Path("runs") / f"{name}-{stamp}", RUN_FILES, overwrite)
