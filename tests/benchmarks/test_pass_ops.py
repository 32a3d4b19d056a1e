"""benchmarks/probes/pass_ops.py: the operations an exact pass dispatches grow with the log
of its key chunks, not with their number (a GPU launches each; docs/PERFORMANCE.md, *On a
CUDA machine*), and the counter counts what runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

import torch

from tests.benchmarks.scripts import load_script

PROBE = load_script("probes/pass_ops.py", "pass_ops_probe")


def test_the_counter_counts_each_dispatched_operation() -> None:
    counter = PROBE.OpCounter()
    with counter:
        x = torch.ones(3)
        (x + x).sum()
    assert counter.ops == {"ones": 1, "add": 1, "sum": 1}


def _per_layer(numerics: str, context: int) -> float:
    two, four = (
        sum(PROBE.pass_ops(PROBE.small_llama(layers, numerics), 1, 1, context).values())
        for layers in (2, 4)
    )
    return float(four - two) / 2


def test_an_exact_layer_at_17_key_chunks_dispatches_few_more_operations_than_at_3() -> None:
    short, long = _per_layer("exact", 128), _per_layer("exact", 1024)
    # one after another the 17 chunks' two sums took 2 x 16 adds and 2 x 17 selects: 56 more
    assert 0 < long - short <= 30, (short, long)
    assert _per_layer("lossy", 1024) == _per_layer("lossy", 128)


def test_a_row_is_the_difference_of_the_two_counts() -> None:
    two = PROBE.Counter({"mm": 10, "add": 6, "copy": 4})
    four = PROBE.Counter({"mm": 18, "add": 10, "copy": 4, "cat": 2})
    row = PROBE.pass_row("exact", (8, 4, 128), two, four)
    assert (row.num_ops_2_layers, row.num_ops_4_layers) == (20, 34)
    assert (row.num_ops_per_layer, row.num_ops_rest) == (7.0, 6.0)
    assert row.top_ops_per_layer == {"mm": 4.0, "add": 2.0, "cat": 1.0}
    assert PROBE.format_row(row) == (
        "exact     8  4   128             20             34          7     6  mm 4, add 2, cat 1"
    )


def test_json_writes_every_printed_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ops.json"
    PROBE.main(["16,32", "--json", str(out)])
    printed = capsys.readouterr().out.splitlines()[1:]
    record = json.loads(out.read_text())
    assert record["command"] == f"python benchmarks/probes/pass_ops.py 16,32 --json {out}"
    assert record["threads"] == torch.get_num_threads()
    assert record["torch"] == torch.__version__
    rows = record["results"]["rows"]
    assert [(r["numerics"], r["num_sessions"], r["num_cached_tokens"]) for r in rows] == [
        (numerics, batch, context)
        for numerics in ("lossy", "exact")
        for batch in (1, 8)
        for context in (16, 32)
    ]
    assert [PROBE.format_row(PROBE.PassRow(**r)) for r in rows] == printed
