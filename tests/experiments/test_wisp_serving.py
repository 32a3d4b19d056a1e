"""The real-server comparison's per-class summary, on hand-made request rows."""

from __future__ import annotations

from edgespec.experiments.wisp_serving import SYSTEMS, system_summary


def test_summary_per_class() -> None:
    rows = [
        {"class": "a", "tokens": [1] * 24, "tokens_per_s": 2.5, "e2e_s": 9.6},
        {"class": "a", "tokens": [1] * 24, "tokens_per_s": 1.5, "e2e_s": 16.0},
        {"class": "b", "tokens": [1] * 12, "tokens_per_s": 0.9, "e2e_s": 13.3},
    ]
    out = system_summary(rows, {"a": 2.0, "b": 1.0, "c": 3.0}, seconds=60.0)
    assert out["requests"] == 3 and out["goodput_tokens_per_s"] == 1.0
    assert abs(out["mean_e2e_s"] - (9.6 + 16.0 + 13.3) / 3) < 1e-12
    assert out["classes"]["a"] == {"target_tokens_per_s": 2.0, "requests": 2, "attainment": 0.5}
    assert out["classes"]["b"]["attainment"] == 0.0
    assert out["classes"]["c"] == {"target_tokens_per_s": 3.0, "requests": 0, "attainment": None}


def test_systems_use_the_serve_flags() -> None:
    assert SYSTEMS["sled"][-1] == "--no-prefix-cache"
    assert SYSTEMS["wisp"][:2] == ["--batching", "wisp"]
