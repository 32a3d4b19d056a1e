"""An M/D/1 queue built from the simulator: Poisson arrivals, one server, batch size 1,
a constant service time D, no network. Mean sojourn (Pollaczek–Khinchine):
W = D + ρ·D / (2·(1 − ρ)), ρ = λ·D."""

from __future__ import annotations

from pathlib import Path

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import write_wisp_profile


def test_md1_mean_latency_matches_pollaczek_khinchine(tmp_path: Path) -> None:
    service_s, rate = 0.010, 60.0  # ρ = 0.6
    server = write_wisp_profile(tmp_path / "d.yaml", 0.0, 0.0, 0.0, service_s)
    data = {
        "seed": 3,
        "duration_s": 1500.0,
        "mode": "centralized",
        "links": {"default": {"rtt_ms": 0.0, "bandwidth_mbps": 1e12}},
        "auto_topology": {
            "devices": [{"count": 2000}],
            "servers": [
                {"count": 1, "max_batch_size": 1, "cost_model": {"kind": "wisp", "profile": server}}
            ],
        },
        "workload": {
            "kind": "poisson",
            "rate_per_s": rate,
            "prompt_tokens": [8],
            "output_tokens": [1],
        },
    }
    result = simulate(scenario_from_dict(data), keep_records=False)
    assert result.metrics is not None
    rho = rate * service_s
    expected = service_s + rho * service_s / (2 * (1 - rho))  # 17.5 ms
    e2e = result.metrics.e2e
    assert e2e is not None and e2e.count > 80_000
    assert abs(e2e.mean_s - expected) / expected < 0.03
