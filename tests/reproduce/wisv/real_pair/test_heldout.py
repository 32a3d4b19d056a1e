"""The held-out check's summary: agreement and speed-up over exact SD on the same
prompts, per threshold and channel, and the agreement file it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.policies.semantic.agreement import load_agreement
from edgespec.reproduce.wisv.real_pair.heldout import agreement_json, main, table


def _run(
    prompt: int, t: int, channel: str, agrees: bool, tokens: int, seconds: float
) -> dict[str, Any]:
    return {"prompt": prompt, "threshold": t, "channel": channel, "agrees": agrees,
            "identical": t == 0, "tokens": tokens, "rounds": tokens // 2,
            "seconds": seconds}  # fmt: skip


RECORDS = [
    {"prompt": 0, "target_only": {"tokens": 20, "seconds": 10.0},
     "runs": [_run(0, 0, "either", True, 20, 20.0), _run(0, 12, "poor", False, 10, 2.0)]},
    {"prompt": 1, "target_only": {"tokens": 30, "seconds": 15.0},
     "runs": [_run(1, 0, "either", True, 30, 10.0)]},
]  # fmt: skip


def test_speed_up_is_over_exact_sd_on_the_same_prompts() -> None:
    rows = {(r["threshold"], r["channel"]): r for r in table(RECORDS)}
    exact = rows[(0, "either")]
    assert exact["prompts"] == 2 and exact["agreement"] == 1.0
    assert exact["tokens_per_s"] == pytest.approx(50 / 30) and exact["speedup"] == 1.0
    lossy = rows[(12, "poor")]
    # 5 tokens/s against exact SD's 1 token/s on prompt 0 alone
    assert lossy["prompts"] == 1 and lossy["agreement"] == 0.0
    assert lossy["speedup"] == pytest.approx(5.0)


def test_summary_only_writes_the_agreement_file(tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    path = tmp_path / "a.json"
    assert main(["--out", str(out), "--summary-only", "--agreement", str(path)]) == 0
    loaded = load_agreement(path)
    assert loaded is not None and loaded.default_threshold == 0
    data = json.loads(path.read_text())
    assert data == agreement_json(table(RECORDS), data["command"])
    assert data["command"].endswith(f"--summary-only --agreement {path}")
