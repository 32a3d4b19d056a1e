"""benchmarks/probes/pass_ops.py: the operations an exact pass dispatches grow with the log
of its key chunks, not with their number (a GPU launches each; docs/PERFORMANCE.md, *On a
CUDA machine*), and the counter counts what runs."""

from __future__ import annotations

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
