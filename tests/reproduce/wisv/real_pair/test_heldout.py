"""The held-out check's summary: agreement and speed-up over exact SD on the same
prompts, per threshold and channel, and the agreement file it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.policies.semantic.agreement import load_agreement
from edgespec.reproduce.wisv.real_pair.heldout import QUICK, agreement_json, reproduce, table


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


def test_a_finished_check_is_summarised_without_the_models(tmp_path: Path) -> None:
    # the quick check's two prompts are done already: nothing runs, nothing loads
    assert QUICK[0] == len(RECORDS)
    (tmp_path / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    rows = reproduce(tmp_path, quick=True, workers=1, progress=False, command="cmd")
    assert rows == table(RECORDS)
    loaded = load_agreement(tmp_path / "gemma3-270m-agreement.json")
    assert loaded is not None and loaded.default_threshold == 0
    data = json.loads((tmp_path / "gemma3-270m-agreement.json").read_text())
    assert data == agreement_json(rows, "cmd")
    report = (tmp_path / "REPORT.md").read_text()
    assert "`cmd`" in report and "| 12 | poor | 1 | 0% | 0% | 5.00 | 5.00x | 5.0 | 10.0 |" in report
    assert "Shipped default: T = 0" in report
