"""Small scenario builders shared by the simulator tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
import yaml


class Tolerance(TypedDict):
    """``pytest.approx`` keyword arguments for a fixed absolute tolerance."""

    abs: float


def write_wisp_profile(
    path: Path, a_s: float, b_compute_s: float, b_read_s: float, c_s: float
) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "kind": "wisp",
                "a_s": a_s,
                "b_compute_s": b_compute_s,
                "b_read_s": b_read_s,
                "c_s": c_s,
            }
        )
    )
    return str(path)


def tiny_scenario(**sections: Any) -> dict[str, Any]:
    """A quick distributed scenario (12 devices, 2 servers, 20 simulated seconds)."""
    data: dict[str, Any] = {
        "name": "tiny",
        "seed": 7,
        "duration_s": 20.0,
        "slo_classes": {"slow": 2.0, "fast": 8.0},
        "links": {
            "wan": {"rtt_ms": 30.0, "jitter_ms": 3.0, "bandwidth_mbps": 20.0, "loss_rate": 0.02}
        },
        "auto_topology": {
            "devices": [
                {
                    "name": "phones",
                    "count": 12,
                    "draft_model": "qwen3-0.6b",
                    "hardware": "jetson-orin",
                    "link": "wan",
                    "slo_mix": {"slow": 0.5, "fast": 0.5},
                }
            ],
            "servers": [
                {
                    "count": 2,
                    "target_model": "qwen3-8b",
                    "hardware": "a40",
                    "kv_budget_tokens": 4000,
                    "max_batch_size": 4,
                    "max_batch_tokens": 200,
                }
            ],
        },
        "policies": {"routing": {"name": "jsq"}, "batching": {"name": "fcfs"}},
        "acceptance": {"kind": "iid", "alpha": 0.7},
        "workload": {
            "kind": "closed_loop",
            "prompt_tokens": [40, 120, 300, 75],
            "output_tokens": [30, 80, 50, 120],
            "think_time_s": 0.5,
        },
    }
    data.update(sections)
    return data


def hand_trace_scenario(
    tmp_path: Path, rows: list[dict[str, Any]], gamma: int, duration_s: float = 1.0
) -> dict[str, Any]:
    """Two devices, one server and a trace of ``rows`` with hand-checkable costs: drafter
    10 ms per forwarded token; server 5 ms + 1 ms per new token + 0.1 ms per cached token;
    link RTT 20 ms, no jitter or loss, 1e6 bytes/s; a static window of ``gamma``."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    draft = write_wisp_profile(tmp_path / "draft.yaml", 0.01, 0.0, 0.0, 0.0)
    server = write_wisp_profile(tmp_path / "server.yaml", 0.001, 0.0, 0.0001, 0.005)
    return {
        "seed": 1,
        "duration_s": duration_s,
        "links": {"default": {"rtt_ms": 20.0, "bandwidth_mbps": 8.0}},
        "auto_topology": {
            "devices": [{"count": 2, "cost_model": {"kind": "wisp", "profile": draft}}],
            "servers": [{"count": 1, "cost_model": {"kind": "wisp", "profile": server}}],
        },
        "policies": {"window": {"name": "static", "params": {"gamma": gamma}}},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
        "record_rounds": True,
    }


def sim_refusal(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``edgespec sim ARGS`` (quiet, no plots, into ``tmp_path/out``) exits 2 and prints
    nothing on stdout: its stderr."""
    from edgespec.cli import main

    out = tmp_path / "out"
    assert main(["sim", *args, "--quiet", "--no-plots", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err
