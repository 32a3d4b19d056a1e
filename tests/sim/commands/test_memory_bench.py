"""edgespec bench memory (sim/memory_bench.py): ns per random object access."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.sim import memory_bench
from edgespec.sim.memory_bench import access_cost


def test_access_cost_times_the_requested_accesses() -> None:
    cost = access_cost(50, 2_000, random.Random(0), repeat=2)
    assert (cost.num_objects, cost.num_accesses) == (50, 2_000)
    assert 0 < cost.ns_per_access < 1e6
    with pytest.raises(ValueError, match=r"must be >= 1, got 0, 10, 1"):
        access_cost(0, 10, random.Random(0), repeat=1)


def test_bench_memory_reports_each_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = functools.partial(memory_bench.access_costs, (10, 1_000), 1_000)
    monkeypatch.setattr(memory_bench, "access_costs", small)
    report = tmp_path / "memory.json"
    assert main(["bench", "memory", "--json", str(report)]) == 0
    rows = json.loads(report.read_text())
    assert [r["num_objects"] for r in rows] == [10, 1_000]
    assert all(r["ns_per_access"] > 0 for r in rows)
    assert main(["bench", "memory", "seed=1"]) == 2  # tests/sim/commands/test_bench.py: the message
