"""Run-folder writers, plots and the terminal summary."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from edgespec.core.types import BatchRecord, RoundRecord
from edgespec.metrics import summarize
from edgespec.metrics.plots import utilization_over_time
from edgespec.metrics.sinks import REQUEST_DERIVED, REQUEST_FIELDS, write_run
from tests.metrics.test_summary import BATCHES, REQUESTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ROUND = RoundRecord("a", 0, 0.0, 0.25, 0.1, 0.05, 0.0, 0.05, 0.05, 4, 3, 4, 2, 0)


def test_write_run_folder(tmp_path: Path) -> None:
    metrics = summarize(REQUESTS, BATCHES, duration_s=4.0, num_servers=2)
    run_dir = tmp_path / "run"
    write_run(run_dir, metrics, REQUESTS, BATCHES, rounds=iter([ROUND]))
    assert json.loads((run_dir / "metrics.json").read_text()) == metrics.to_dict()

    rows = list(csv.reader(io.StringIO((run_dir / "requests.csv").read_text())))
    assert tuple(rows[0]) == (*REQUEST_FIELDS, *REQUEST_DERIVED)
    assert len(rows) == 1 + len(REQUESTS)
    b = dict(zip(rows[0], rows[2], strict=True))
    assert b["request_id"] == "b"
    assert (b["first_token_s"], b["e2e_s"], b["tokens_per_s"], b["slo_met"]) == (
        "1.5",
        "2.0",
        "4.0",
        "False",
    )
    assert float(b["tpot_s"]) == 1.5 / 7
    d = dict(zip(rows[0], rows[4], strict=True))
    assert (d["slo_tokens_per_s"], d["slo_met"]) == ("", "")

    rounds = list(csv.reader(io.StringIO((run_dir / "rounds.csv").read_text())))
    assert rounds[0][-3:] == ["deadline_s", "num_draft_passes", "fused"]
    # no deadline, no stop predictor (passes = drafted), a distributed round
    assert ",".join(rounds[1]) == "a,0,0.0,0.25,0.1,0.05,0.0,0.05,0.05,4,3,4,2,0,,,False"

    import pyarrow.parquet as pq

    table = pq.read_table(run_dir / "requests.parquet")
    assert table.column("request_id").to_pylist() == ["a", "b", "c", "d"]
    assert table.column("slo_met").to_pylist() == [True, False, True, None]
    assert table.column("num_output_tokens").type == "int64"

    for name in ("latency_cdf", "slo_attainment", "utilization", "batch_sizes"):
        assert (run_dir / f"{name}.png").read_bytes()[:8] == PNG_MAGIC


def test_write_run_without_plots_or_rounds(tmp_path: Path) -> None:
    metrics = summarize([], [], duration_s=1.0, num_servers=1)
    write_run(tmp_path, metrics, [], [], plots=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "metrics.json",
        "requests.csv",
        "requests.parquet",
    ]


def test_plots_of_empty_run(tmp_path: Path) -> None:
    metrics = summarize([], [], duration_s=1.0, num_servers=1)
    write_run(tmp_path, metrics, [], [])
    assert (tmp_path / "latency_cdf.png").read_bytes()[:8] == PNG_MAGIC


def test_utilization_over_time_bins() -> None:
    batches = [
        BatchRecord(0, 0.5, 1.5, 1, 1, 0),  # half of bin 0, half of bin 1
        BatchRecord(0, 2.0, 4.5, 1, 1, 0),  # bins 2 and 3 fully, past the end
        BatchRecord(1, 3.25, 3.5, 1, 1, 0),
    ]
    edges, util = utilization_over_time(batches, num_servers=2, duration_s=4.0, num_bins=4)
    assert edges.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose(util, [[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.0, 0.25]], atol=1e-12)
    with pytest.raises(ValueError, match="batch on server 1 but num_servers=1"):
        utilization_over_time(batches, num_servers=1, duration_s=4.0)
