"""The checkpoint's lines for the drafter's batched timings
(:mod:`edgespec.profiling.draft_batch`), one per measured (b, context) cell, beside the
target's configurations (:mod:`edgespec.profiling.checkpoint`):

``{"draft": NAME, "gamma": γ, "batch_size": b, "context_tokens": L, "samples":
[{"kind": "cold" | "follow_up", "shape": [rows, N_linear, N_interactions, N_cached],
"num_passes": n, "time_s": t}, ...]}``

A resumed run takes the cells of its own ``--draft`` and ``--gamma`` and measures the
rest; a checkpoint written before these lines existed has none, so all are measured.
"""

from __future__ import annotations

import math
from typing import Any

from edgespec.policies.estimator import BatchShape
from edgespec.profiling.draft import DraftSample

DraftKey = tuple[str, int, int, int]
"""(draft name, γ, batch size, context tokens) of a measured cell."""
_KEYS = {"draft", "gamma", "batch_size", "context_tokens", "samples"}
_SAMPLE_KEYS = {"kind", "shape", "num_passes", "time_s"}


def is_draft_record(record: Any) -> bool:
    return isinstance(record, dict) and "draft" in record


def draft_record(key: DraftKey, samples: list[DraftSample]) -> dict[str, Any]:
    """The line of the cell ``key`` measured as ``samples``."""
    draft, gamma, batch_size, context_tokens = key
    rows = [
        {
            "kind": s.kind,
            "shape": [
                s.shape.batch_size,
                s.shape.num_linear,
                s.shape.num_interactions,
                s.shape.num_cached,
            ],
            "num_passes": s.num_passes,
            "time_s": s.time_s,
        }
        for s in samples
    ]
    return {
        "draft": draft,
        "gamma": gamma,
        "batch_size": batch_size,
        "context_tokens": context_tokens,
        "samples": rows,
    }


def _int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r:.40}")
    return value


def _draft_sample(raw: Any, name: str, key: DraftKey) -> DraftSample:
    if not isinstance(raw, dict) or set(raw) != _SAMPLE_KEYS:
        raise ValueError(
            f"{name} must be an object with kind, shape, num_passes and time_s, got {raw!r:.80}"
        )
    if raw["kind"] not in ("cold", "follow_up"):
        raise ValueError(f"{name}.kind must be cold or follow_up, got {raw['kind']!r:.40}")
    shape = raw["shape"]
    if not isinstance(shape, list) or len(shape) != 4:
        raise ValueError(f"{name}.shape must be 4 integers, got {shape!r:.80}")
    counts = [_int(v, f"{name}.shape[{i}]", 0) for i, v in enumerate(shape)]
    time_s = raw["time_s"]
    if isinstance(time_s, bool) or not isinstance(time_s, int | float):
        raise ValueError(f"{name}.time_s must be a number, got {time_s!r:.40}")
    if not (math.isfinite(time_s) and time_s >= 0):
        raise ValueError(f"{name}.time_s must be a finite number >= 0, got {time_s}")
    _, gamma, batch_size, context_tokens = key
    passes = _int(raw["num_passes"], f"{name}.num_passes", 1)
    return DraftSample(
        raw["kind"],
        context_tokens,
        gamma,
        BatchShape(*counts),
        passes,
        float(time_s),
        batch_size,
        True,
    )


def read_draft_record(record: dict[str, Any]) -> tuple[DraftKey, tuple[DraftSample, ...]]:
    """A cell's line, checked (``ValueError`` naming the field otherwise)."""
    if set(record) != _KEYS:
        raise ValueError(
            "expected an object with draft, gamma, batch_size, context_tokens and samples, "
            f"got {record!r:.80}"
        )
    if not isinstance(record["draft"], str) or not record["draft"]:
        raise ValueError(f"draft must be a model name, got {record['draft']!r:.40}")
    key = (
        record["draft"],
        _int(record["gamma"], "gamma", 1),
        _int(record["batch_size"], "batch_size", 1),
        _int(record["context_tokens"], "context_tokens", 1),
    )
    raw = record["samples"]
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"samples must be a non-empty list, got {raw!r:.80}")
    return key, tuple(_draft_sample(s, f"samples[{i}]", key) for i, s in enumerate(raw))
