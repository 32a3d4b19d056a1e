"""``--capacity`` over a workload whose load a device count does not scale is refused before
any run: under ``poisson`` ``rate_per_s`` is the whole fleet's and a trace fixes the
arrivals, so the violation rate does not grow with the count the search bisects (a
simulator audit: it answered "None: even count=1 violates" where count=64 violated 0%)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.helpers import sim_refusal

CAPACITY = ["--capacity", "auto_topology.devices.0.count", "--lo", "1", "--hi", "8",
            "duration_s=1"]  # fmt: skip


@pytest.mark.parametrize(
    ("workload", "why"),
    [
        ("workload={kind: poisson, rate_per_s: 3}", "rate_per_s is the whole fleet's"),
        ("workload={kind: trace, trace: gsm8k}", "the trace fixes the arrivals"),
    ],
)
def test_a_capacity_search_needs_a_closed_loop(
    workload: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kind = "poisson" if "poisson" in workload else "trace"
    assert sim_refusal([workload, *CAPACITY], tmp_path, capsys) == (
        f"edgespec sim: config field 'workload.kind': --capacity needs a closed_loop workload, "
        f"where each device adds load; under {kind} {why}, so the violation rate does not grow "
        "with the device count the search bisects\n"
    )
    assert not (tmp_path / "out").exists()
